// Outgoing batching: frames produced in one tick go out as one WebSocket message, never larger
// than the negotiated frameMax (a larger set is cut at frame boundaries into several messages).
import { MessageTooLargeError } from '../errors.ts';
import type { Frame } from '../wire/index.ts';
import { batchEntrySize, encodeFrame, sendInBatches } from '../wire/index.ts';

/** Where batches go: the socket. */
export interface BatchSink {
  send(data: Uint8Array): void;
  /** Bytes the sink has queued but not yet written (WebSocket.bufferedAmount). */
  readonly bufferedAmount: number;
}

export interface FrameWriterOptions {
  /** Largest batch, in bytes. */
  frameMax: number;
  /** Runs the flush later in the same tick; default queueMicrotask. */
  schedule?: (flush: () => void) => void;
  /** A send failed during a scheduled flush (the socket is gone); the connection decides. */
  onError?: (err: unknown) => void;
}

/** Encodes frames, queues them, and flushes the queue once per tick in batches of at most frameMax. */
export class FrameWriter {
  #sink: BatchSink;
  #frameMax: number;
  #schedule: (flush: () => void) => void;
  #onError: (err: unknown) => void;
  #pending: Uint8Array[] = [];
  /** Size the pending frames take in batches (each frame plus its 1 + varint prefix), in bytes. */
  #pendingBytes = 0;
  #scheduled = false;
  #sentSinceCheck = false;
  readonly #sendBatch = (batch: Uint8Array): void => {
    this.#sink.send(batch);
  };
  #flushBound = (): void => {
    this.#scheduled = false;
    try {
      this.flush();
    } catch (err) {
      this.#onError(err);
    }
  };

  constructor(sink: BatchSink, options: FrameWriterOptions) {
    this.#sink = sink;
    this.#frameMax = options.frameMax;
    // Wrapped, not stored bare: browsers throw "Illegal invocation" when queueMicrotask is called
    // with a `this` other than the global object (Node does not mind).
    this.#schedule = options.schedule ?? ((flush) => queueMicrotask(flush));
    this.#onError =
      options.onError ??
      ((err) => {
        throw err;
      });
  }

  /** The batch size limit, in bytes; set when the handshake negotiates it. */
  get frameMax(): number {
    return this.#frameMax;
  }

  set frameMax(bytes: number) {
    this.#frameMax = bytes;
  }

  /** Bytes waiting: the sink's buffer plus what has not been flushed yet. */
  get bufferedBytes(): number {
    return this.#sink.bufferedAmount + this.#pendingBytes;
  }

  /** Frames queued and not yet flushed. */
  get pendingFrames(): number {
    return this.#pending.length;
  }

  /**
   * Encodes a frame, checking it fits in a batch on its own. Throws MessageTooLargeError (nothing
   * queued) when it does not.
   */
  encode(frame: Frame): Uint8Array {
    return this.fit(encodeFrame(frame));
  }

  /**
   * Returns a frame encoded elsewhere (the fast encoders) after checking it fits in a batch on its
   * own. Throws MessageTooLargeError when it does not.
   */
  fit(bytes: Uint8Array): Uint8Array {
    const size = batchEntrySize(bytes.length);
    if (size > this.#frameMax) throw new MessageTooLargeError(size, this.#frameMax);
    return bytes;
  }

  /** Queues an encoded frame for this tick's batch. */
  enqueue(bytes: Uint8Array): void {
    this.#pending.push(bytes);
    this.#pendingBytes += batchEntrySize(bytes.length);
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#schedule(this.#flushBound);
    }
  }

  /** encode + enqueue. */
  write(frame: Frame): void {
    this.enqueue(this.encode(frame));
  }

  /** Sends everything queued now, in as few batches as frameMax allows, in order. */
  flush(): void {
    const pending = this.#pending;
    if (pending.length === 0) return;
    this.#pending = [];
    this.#pendingBytes = 0;
    sendInBatches(pending, this.#frameMax, this.#sendBatch);
    this.#sentSinceCheck = true;
  }

  /** Drops everything queued (the connection is gone). */
  discard(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  /** Whether anything was sent since the last call (for heartbeats). */
  takeSentFlag(): boolean {
    const sent = this.#sentSinceCheck || this.#pending.length > 0;
    this.#sentSinceCheck = false;
    return sent;
  }
}
