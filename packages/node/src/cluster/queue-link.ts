/**
 * The queue-RPC link: how one node runs queue commands on the node that leads the queue's group,
 * and how a leader hands deliveries to the node holding the consuming channel.
 *
 * One long-lived libp2p stream per peer and direction (`QUEUE_LINK_PROTOCOL`), opened on the first
 * call. The caller writes request frames on it; the responder answers each on the same stream, in
 * whatever order the answers complete, matched by call id. Requests from one node reach the other
 * in the order they were made, and the responder starts handling each in arrival order (its handler
 * is called synchronously per frame), so commands a node sends to one queue are proposed in that
 * order: a publisher's messages keep their per-queue order.
 *
 * Frame payloads (inside the u32 length prefix of `encodeFrame`):
 *   request   [1][u32 call id][u8 op][u16 group length][group utf-8][body]
 *   ok        [2][u32 call id][body]
 *   error     [3][u32 call id][u8 code length][code][u16 text length][text]
 *
 * A frame that does not parse, or a request whose body the handler cannot decode, closes that
 * stream only (and is logged): the connection and every other stream go on. A frame of a kind or a
 * request of an op this version does not know (a newer peer's) closes nothing: every frame starts
 * `[u8 kind][u32 call id]`, so the call is answered with the error `UNKNOWN_MESSAGE` naming both
 * versions (the caller's call rejects with `QueueLinkUnknownMessageError`), logged once per peer. An answer to no call
 * waiting is dropped (it cannot be told from one that came after its call timed out). A call whose stream breaks or
 * that gets no answer in time rejects with `QueueLinkLostError` / `QueueLinkTimeoutError`: its
 * outcome is unknown (the caller retries with an idempotency id, or reports the loss).
 *
 * Writes: the frames one turn makes for a stream (requests on the caller's, answers on the
 * responder's) go out together, as one `send` in a microtask (cost is per write: yamux frame, noise
 * cipher, socket write); and the calls of one turn share one deadline timer.
 *
 * Back-pressure: a request is handed to the stream only while it takes more (`send` returned true,
 * no `drain` awaited); the others wait here, in order, and go on `drain`. At most `maxQueuedBytes`
 * of them wait per peer (plus one frame, so a request of any allowed size can go): past it a call
 * fails at once with `QueueLinkBusyError` (not sent; callers retry it as a lost one), and a
 * request whose call timed out while waiting is never sent. On the answering side, a caller that
 * leaves more than `maxQueuedBytes` of answers unread has its stream closed (its calls fail as
 * lost) instead of the answers piling up here (the streams' own write buffers are unbounded).
 */
import type { Connection, Libp2p, Stream } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import type { Logger } from '../logging/logger.ts';
import { ClusterError, FrameTooLargeError } from './errors.ts';
import { FrameBatch } from './frame-batch.ts';
import { nodeMultiaddr } from './peer-address.ts';
import type { PeerVersions, UnknownMessage } from './protocol-version.ts';
import { fixedVersions, receivedUnknown, UnknownMessageLog } from './protocol-version.ts';
import { allocFrame, FRAME_PREFIX_BYTES, FrameDecoder, messageChunks } from './raft-frames.ts';

export const QUEUE_LINK_PROTOCOL = '/styx/queue-rpc/1.0.0';

/** Bound on one frame, bytes: a message body (at most 128 MiB in AMQP) plus its command. */
export const DEFAULT_QUEUE_LINK_MAX_FRAME_BYTES = 160 * 1024 * 1024;

/** Bytes of requests that may wait per peer for the stream to take them, and of unread answers per stream. */
export const DEFAULT_QUEUE_LINK_MAX_QUEUED_BYTES = 16 * 1024 * 1024;

/** Default time a call waits for its answer, dial included, ms. */
export const DEFAULT_QUEUE_LINK_TIMEOUT_MS = 10_000;

/** Time a dial to a peer may take, ms. */
const DIAL_TIMEOUT_MS = 5_000;

const REQUEST = 1;
const ANSWER_OK = 2;
const ANSWER_ERROR = 3;
/** The error code of an answer to a frame kind or an op the responder does not know. */
export const UNKNOWN_MESSAGE_CODE = 'UNKNOWN_MESSAGE';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
/** Error codes and texts are cut to their bounds, possibly inside a character. */
const lenientDecoder = new TextDecoder('utf-8');

/**
 * Answers one request: its op, group, body and the caller's proven peer id in, the answer out.
 * `headroom` bytes before `body` in its buffer are the request's own header, already read: the
 * handler may overwrite them (to write a log entry's header in front of the body without a copy).
 */
export type QueueLinkHandler = (
  op: number,
  group: string,
  body: Uint8Array,
  from: string,
  headroom?: number,
) => Promise<Uint8Array> | Uint8Array;

/**
 * A request body that writes itself into the call's frame (a batch of sends): no parts array, no
 * views, each byte copied once, into the frame.
 */
export interface FrameBody {
  readonly byteLength: number;
  /** Write the `byteLength` bytes at `at` of `frame`. */
  writeTo(frame: Uint8Array, at: number): void;
}

/** Thrown by a handler to answer with an error; the caller's call rejects with `QueueLinkRemoteError`. */
export class QueueLinkError extends ClusterError {
  constructor(code: string, message: string) {
    // An answer, not a fault: "not the leader here" is thrown for every request a moved leader
    // still gets (thousands a second while 10,000 queues fail over, 5 % of a survivor's CPU in a
    // profile went to capturing their stacks), and only its code and text travel back.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(code, message);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }
}

/** The responder answered with an error (`code`, and its text as the message). */
export class QueueLinkRemoteError extends ClusterError {
  readonly peer: string;
  constructor(code: string, text: string, peer: string) {
    super(code, text);
    this.peer = peer;
  }
}

/**
 * The peer did not know the request's frame kind or op (`UNKNOWN_MESSAGE`: another version), or
 * this node did not know the kind of its answer. Nothing was done with it; `message` names both
 * versions.
 */
export class QueueLinkUnknownMessageError extends QueueLinkRemoteError implements UnknownMessage {
  readonly protocol = 'queue-link';
  readonly what: string;
  readonly senderVersion: number | undefined;
  readonly receiverVersion: number | undefined;
  constructor(text: string, details: Omit<UnknownMessage, 'protocol'>) {
    super(UNKNOWN_MESSAGE_CODE, text, details.peer);
    this.what = details.what;
    this.senderVersion = details.senderVersion;
    this.receiverVersion = details.receiverVersion;
  }
}

/** The stream broke (or could not be opened) before the answer came: the outcome is unknown. */
export class QueueLinkLostError extends ClusterError {
  readonly peer: string;
  constructor(peer: string, reason: string, code = 'LINK_LOST') {
    super(code, `queue link to ${peer} lost: ${reason}`);
    this.peer = peer;
  }
}

/** No answer in time: the outcome is unknown. */
export class QueueLinkTimeoutError extends ClusterError {
  readonly peer: string;
  constructor(peer: string, ms: number) {
    super('LINK_TIMEOUT', `no answer from ${peer} within ${ms} ms`);
    this.peer = peer;
  }
}

/**
 * The request was not sent: more than the bound already waits for the stream to the peer (a peer
 * that does not keep up). A kind of lost call for callers (they retry it), with its own code.
 */
export class QueueLinkBusyError extends QueueLinkLostError {
  constructor(peer: string, queuedBytes: number, limit: number) {
    super(peer, `${queuedBytes} bytes already wait to be sent (bound ${limit} bytes)`, 'LINK_BUSY');
  }
}

/** A frame that does not follow the layout above. */
export class QueueLinkFrameError extends ClusterError {
  constructor(reason: string) {
    super('FRAME_MALFORMED', `malformed queue-link frame: ${reason}`);
  }
}

interface PendingCall {
  /** The request's op, to name it when the peer does not know it. */
  readonly op: number;
  readonly resolve: (body: Uint8Array) => void;
  readonly reject: (error: Error) => void;
  readonly deadline: CallDeadline;
}

/** One timer for the calls made to a peer in one turn with the same timeout. */
interface CallDeadline {
  readonly timeoutMs: number;
  readonly ids: number[];
  /** Calls of it still waiting for their answer; the timer is cleared at 0. */
  open: number;
  timer: NodeJS.Timeout | undefined;
}

/** This node's stream to one peer and the calls waiting on it. */
interface OutboundLink {
  stream: Stream | undefined;
  opening: Promise<void> | undefined;
  readonly pending: Map<number, PendingCall>;
  /**
   * Requests waiting for the stream (made this turn, being opened, or full until its `drain`), in
   * order, tagged with their call ids (at most `maxQueuedBytes` plus one frame).
   */
  readonly queued: FrameBatch<number>;
  /** The stream whose `drain` (or this turn's flush) is awaited, if any. */
  awaiting: Stream | undefined;
  /** The deadline calls made this turn join (dropped at the turn's flush). */
  deadline: CallDeadline | undefined;
}

export interface QueueLinkOptions {
  readonly node: Libp2p;
  readonly logger: Logger;
  /** Whether a peer may open queue-link streams to this node (cluster members only). */
  readonly admit: (peerId: string) => boolean;
  readonly maxFrameBytes?: number;
  /** See `DEFAULT_QUEUE_LINK_MAX_QUEUED_BYTES`, bytes. */
  readonly maxQueuedBytes?: number;
  /**
   * Whether this node knows `op` (default: every op goes to the handler). A request of an op it
   * does not know is answered `UNKNOWN_MESSAGE` here, before the handler.
   */
  readonly knowsOp?: (op: number) => boolean;
  /** Versions to name in answers to unknown messages (default: this build's, peers' unknown). */
  readonly versions?: PeerVersions;
}

export class QueueLink {
  readonly nodeId: string;
  readonly #node: Libp2p;
  readonly #log: Logger;
  readonly #admit: (peerId: string) => boolean;
  readonly #maxFrameBytes: number;
  readonly #maxQueuedBytes: number;
  readonly #knowsOp: (op: number) => boolean;
  readonly #versions: PeerVersions;
  readonly #unknown: UnknownMessageLog;
  readonly #addresses = new Map<string, Multiaddr>();
  readonly #links = new Map<string, OutboundLink>();
  readonly #inbound = new Set<Stream>();
  readonly #closing = new AbortController();
  #handler: QueueLinkHandler | undefined;
  #nextCallId = 1;
  #closed = false;

  private constructor(options: QueueLinkOptions) {
    this.#node = options.node;
    this.nodeId = options.node.peerId.toString();
    this.#log = options.logger.child({ component: 'queue-link' });
    this.#admit = options.admit;
    this.#maxFrameBytes = options.maxFrameBytes ?? DEFAULT_QUEUE_LINK_MAX_FRAME_BYTES;
    this.#maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_QUEUE_LINK_MAX_QUEUED_BYTES;
    this.#knowsOp = options.knowsOp ?? (() => true);
    this.#versions = options.versions ?? fixedVersions();
    this.#unknown = new UnknownMessageLog(this.#log);
  }

  static async start(options: QueueLinkOptions): Promise<QueueLink> {
    const link = new QueueLink(options);
    await options.node.handle(QUEUE_LINK_PROTOCOL, (stream, connection) => link.#accept(stream, connection), {
      maxInboundStreams: 8,
    });
    options.node.addEventListener('peer:disconnect', link.#onDisconnect);
    return link;
  }

  /** Where `nodeId` listens (`host:port`). */
  addPeer(nodeId: string, address: string): void {
    this.#addresses.set(nodeId, nodeMultiaddr(nodeId, address));
  }

  removePeer(nodeId: string): void {
    this.#addresses.delete(nodeId);
    const link = this.#links.get(nodeId);
    if (link === undefined) return;
    this.#links.delete(nodeId);
    this.#fail(nodeId, link, 'peer removed');
    link.stream?.abort(new Error('peer removed'));
  }

  /** Bytes of requests to `peer` held in this process: waiting here, or in the stream's buffer. */
  bufferedBytes(peer: string): number {
    const link = this.#links.get(peer);
    if (link === undefined) return 0;
    return link.queued.bytes + (link.stream?.writeBufferLength ?? 0);
  }

  /** Answer requests with `handler` (one handler per node). */
  handle(handler: QueueLinkHandler): void {
    this.#handler = handler;
  }

  /**
   * Send a request and resolve with the answer's body. `body` may come in parts, sent as one body
   * in a row, or write itself (`FrameBody`): either way each byte is copied once, into the frame.
   */
  call(
    peer: string,
    op: number,
    group: string,
    body: Uint8Array | readonly Uint8Array[] | FrameBody,
    timeoutMs = DEFAULT_QUEUE_LINK_TIMEOUT_MS,
  ): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(new QueueLinkLostError(peer, 'link closed'));
    const groupBytes = encoder.encode(group);
    if (groupBytes.byteLength > 0xffff) return Promise.reject(new RangeError('group id too long'));
    const parts = body instanceof Uint8Array ? [body] : Array.isArray(body) ? body : undefined;
    let bodyBytes = 0;
    if (parts === undefined) bodyBytes = (body as FrameBody).byteLength;
    else for (const part of parts) bodyBytes += part.byteLength;
    const size = 1 + 4 + 1 + 2 + groupBytes.byteLength + bodyBytes;
    if (size > this.#maxFrameBytes) return Promise.reject(new FrameTooLargeError(size, this.#maxFrameBytes));
    const link = this.#link(peer);
    if (link.queued.length > 0 && link.queued.bytes + FRAME_PREFIX_BYTES + size > this.#maxQueuedBytes)
      return Promise.reject(new QueueLinkBusyError(peer, link.queued.bytes, this.#maxQueuedBytes));
    const id = this.#nextCallId;
    this.#nextCallId = id === 0xffffffff ? 1 : id + 1;
    // The frame is written in place: the body is copied once, into the frame.
    const frame = allocFrame(size);
    const at = FRAME_PREFIX_BYTES;
    const view = new DataView(frame.buffer);
    frame[at] = REQUEST;
    view.setUint32(at + 1, id);
    frame[at + 5] = op;
    view.setUint16(at + 6, groupBytes.byteLength);
    frame.set(groupBytes, at + 8);
    let pos = at + 8 + groupBytes.byteLength;
    if (parts === undefined) (body as FrameBody).writeTo(frame, pos);
    else
      for (const part of parts) {
        frame.set(part, pos);
        pos += part.byteLength;
      }
    const deadline = this.#deadline(peer, link, timeoutMs);
    return new Promise<Uint8Array>((resolve, reject) => {
      link.pending.set(id, { op, resolve, reject, deadline });
      deadline.ids.push(id);
      deadline.open++;
      this.#write(peer, link, id, frame);
    });
  }

  /** The deadline of this turn's calls to `peer` with `timeoutMs`: one timer for all of them. */
  #deadline(peer: string, link: OutboundLink, timeoutMs: number): CallDeadline {
    const current = link.deadline;
    if (current !== undefined && current.timeoutMs === timeoutMs) return current;
    const deadline: CallDeadline = { timeoutMs, ids: [], open: 0, timer: undefined };
    deadline.timer = setTimeout(() => {
      deadline.timer = undefined;
      if (link.deadline === deadline) link.deadline = undefined;
      for (const id of deadline.ids) {
        const call = link.pending.get(id);
        if (call === undefined || call.deadline !== deadline) continue;
        link.pending.delete(id);
        call.reject(new QueueLinkTimeoutError(peer, timeoutMs));
      }
    }, timeoutMs);
    deadline.timer.unref();
    link.deadline = deadline;
    // The next turn's calls get a deadline of their own.
    queueMicrotask(() => {
      if (link.deadline === deadline) link.deadline = undefined;
    });
    return deadline;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#node.removeEventListener('peer:disconnect', this.#onDisconnect);
    for (const [peer, link] of this.#links) {
      this.#fail(peer, link, 'link closed');
      link.stream?.abort(new Error('queue link closed'));
    }
    this.#links.clear();
    for (const stream of this.#inbound) stream.abort(new Error('queue link closed'));
    this.#inbound.clear();
    await this.#node.unhandle(QUEUE_LINK_PROTOCOL).catch(() => undefined);
  }

  // ------------------------------------------------------------------------------ caller side

  #link(peer: string): OutboundLink {
    let link = this.#links.get(peer);
    if (link === undefined) {
      link = {
        stream: undefined,
        opening: undefined,
        pending: new Map(),
        queued: new FrameBatch<number>(),
        awaiting: undefined,
        deadline: undefined,
      };
      this.#links.set(peer, link);
    }
    return link;
  }

  /** Queue a request for this turn's write to the stream (opening it first if need be). */
  #write(peer: string, link: OutboundLink, id: number, frame: Uint8Array): void {
    link.queued.push(frame, id);
    const stream = link.stream;
    if (stream !== undefined && stream.writeStatus === 'writable') this.#awaitDrain(link, stream);
    else if (link.opening === undefined) link.opening = this.#open(peer, link);
  }

  /**
   * Hand the waiting requests to `stream` in one write, if it takes more; skips those whose call
   * ended (timed out while waiting: never sent).
   */
  #flush(link: OutboundLink, stream: Stream): void {
    if (link.queued.length === 0 || stream.writeStatus !== 'writable') return;
    if (stream.writableNeedsDrain) {
      this.#awaitDrain(link, stream);
      return;
    }
    const bytes = link.queued.take((id) => link.pending.has(id));
    if (bytes !== undefined && !stream.send(bytes)) this.#awaitDrain(link, stream);
  }

  /**
   * Flush at the end of this turn if `stream` takes more, else once it drains. (The 'drain' event,
   * not `onDrain()`: libp2p keeps the first `onDrain` promise once resolved and hands it out again,
   * so awaiting it spun.) A stream that closes first never drains: its close fails the calls, and
   * `#fail` drops what waited.
   */
  #awaitDrain(link: OutboundLink, stream: Stream): void {
    if (link.awaiting === stream) return;
    link.awaiting = stream;
    const drained = (): void => {
      if (link.awaiting === stream) link.awaiting = undefined;
      if (link.stream === stream) this.#flush(link, stream);
    };
    if (!stream.writableNeedsDrain) queueMicrotask(drained);
    else stream.addEventListener('drain', drained, { once: true });
  }

  /** Open the stream and write what queued meanwhile; a failure fails the calls waiting (never throws). */
  async #open(peer: string, link: OutboundLink): Promise<void> {
    try {
      await undefined; // never settle synchronously: `finally` must run after `#write` stored `opening`
      const address = this.#addresses.get(peer);
      if (address === undefined) throw new Error('no known address');
      const signal = AbortSignal.any([AbortSignal.timeout(DIAL_TIMEOUT_MS), this.#closing.signal]);
      const stream = await this.#node.dialProtocol(address, QUEUE_LINK_PROTOCOL, { signal });
      if (this.#closed || this.#links.get(peer) !== link) {
        stream.abort(new Error('queue link closed'));
        throw new Error('link closed');
      }
      link.stream = stream;
      this.#readAnswers(peer, link, stream);
      stream.addEventListener('close', () => {
        if (link.stream !== stream) return;
        link.stream = undefined;
        this.#fail(peer, link, 'stream closed');
      });
      if (stream.writeStatus !== 'writable') {
        // Closed as it opened (the peer refused it), perhaps before the listener was there.
        link.stream = undefined;
        throw new Error(`stream ${stream.writeStatus} as it opened`);
      }
      this.#flush(link, stream);
    } catch (error) {
      this.#log.debug({ peer, err: error }, 'cannot open a queue link to the peer');
      this.#fail(peer, link, `cannot open a stream: ${(error as Error).message}`);
    } finally {
      link.opening = undefined;
    }
  }

  /** Every call waiting on `link` fails: its outcome is unknown. */
  #fail(peer: string, link: OutboundLink, reason: string): void {
    link.queued.clear();
    if (link.pending.size === 0) return;
    const pending = [...link.pending.values()];
    link.pending.clear();
    const error = new QueueLinkLostError(peer, reason);
    for (const call of pending) {
      settled(call);
      call.reject(error);
    }
  }

  #readAnswers(peer: string, link: OutboundLink, stream: Stream): void {
    const frames = new FrameDecoder(this.#maxFrameBytes);
    stream.addEventListener('message', (event) => {
      try {
        for (const chunk of messageChunks(event.data)) {
          for (const payload of frames.push(chunk)) this.#answer(peer, link, payload);
        }
      } catch (error) {
        this.#log.warn({ peer, err: error }, 'malformed queue-link answer: closing the stream');
        stream.abort(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  #answer(peer: string, link: OutboundLink, payload: Uint8Array): void {
    if (payload.byteLength < 5) throw new QueueLinkFrameError('answer shorter than its header');
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const id = view.getUint32(1);
    const call = link.pending.get(id);
    // An answer to no call waiting: one that timed out meanwhile (a stranger's id cannot be told
    // apart from it), dropped.
    if (call === undefined) return;
    link.pending.delete(id);
    settled(call);
    if (payload[0] === ANSWER_OK) {
      call.resolve(payload.subarray(5));
      return;
    }
    if (payload[0] !== ANSWER_ERROR) {
      // A later version's answer kind: its call fails, the stream goes on.
      const what = `answer kind ${payload[0]}`;
      const { message, text } = receivedUnknown(this.#versions, this.nodeId, peer, 'queue-link', what);
      this.#unknown.report(message, text, 'received');
      call.reject(new QueueLinkUnknownMessageError(text, message));
      return;
    }
    // The call named fails with the frame's fault before the stream is closed for it.
    const codeLength = payload[5] ?? 0;
    if (payload.byteLength < 8 + codeLength) {
      const failure = new QueueLinkFrameError('error answer shorter than its header');
      call.reject(failure);
      throw failure;
    }
    const code = lenientDecoder.decode(payload.subarray(6, 6 + codeLength));
    const textLength = view.getUint16(6 + codeLength);
    const text = lenientDecoder.decode(payload.subarray(8 + codeLength, 8 + codeLength + textLength));
    if (code !== UNKNOWN_MESSAGE_CODE) {
      call.reject(new QueueLinkRemoteError(code, text, peer));
      return;
    }
    const details = {
      what: `op ${call.op}`,
      peer,
      senderVersion: this.#versions.localVersion,
      receiverVersion: this.#versions.versionOf(peer),
    };
    const error = new QueueLinkUnknownMessageError(text, details);
    this.#unknown.report(error, text, 'refused by the peer');
    call.reject(error);
  }

  // ------------------------------------------------------------------------------ responder side

  #accept(stream: Stream, connection: Connection): void {
    if (this.#closed) {
      stream.abort(new Error('queue link closed'));
      return;
    }
    const peer = connection.remotePeer.toString();
    if (!this.#admit(peer)) {
      this.#log.warn({ peer }, 'queue-link stream refused: the peer is not a cluster member');
      stream.abort(new Error('not a cluster member'));
      return;
    }
    const frames = new FrameDecoder(this.#maxFrameBytes);
    const answers = new FrameBatch();
    this.#inbound.add(stream);
    stream.addEventListener('close', () => this.#inbound.delete(stream));
    stream.addEventListener('message', (event) => {
      try {
        for (const chunk of messageChunks(event.data)) {
          for (const payload of frames.push(chunk)) this.#request(peer, stream, answers, payload);
        }
      } catch (error) {
        this.#log.warn({ peer, err: error }, 'malformed queue-link request: closing its stream');
        stream.abort(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  #request(peer: string, stream: Stream, answers: FrameBatch, payload: Uint8Array): void {
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    if (payload.byteLength >= 5 && payload[0] !== REQUEST) {
      // Every frame starts [kind][call id]: a later version's kind is answered, not a fault.
      this.#answerUnknown(peer, stream, answers, view.getUint32(1), `frame kind ${payload[0]}`);
      return;
    }
    if (payload.byteLength < 8) throw new QueueLinkFrameError('request shorter than its header');
    const id = view.getUint32(1);
    const op = payload[5] as number;
    if (!this.#knowsOp(op)) {
      this.#answerUnknown(peer, stream, answers, id, `op ${op}`);
      return;
    }
    const groupLength = view.getUint16(6);
    if (8 + groupLength > payload.byteLength) throw new QueueLinkFrameError('group id runs past the frame');
    const group = decoder.decode(payload.subarray(8, 8 + groupLength));
    const body = payload.subarray(8 + groupLength);
    const handler = this.#handler;
    let answer: Promise<Uint8Array> | Uint8Array;
    try {
      if (handler === undefined)
        throw new QueueLinkError('UNAVAILABLE', 'this node does not serve queues yet');
      answer = handler(op, group, body, peer, 8 + groupLength);
    } catch (error) {
      this.#reply(stream, answers, errorFrame(id, error, this.#log));
      // A body that does not decode is a broken or hostile sender: once the call is answered with
      // the reason (written now, with the turn's answers before it), its stream is closed (by the
      // caller of this method).
      if (error instanceof QueueLinkFrameError) {
        this.#sendAnswers(stream, answers);
        throw error;
      }
      return;
    }
    if (answer instanceof Uint8Array) {
      this.#reply(stream, answers, okFrame(id, answer));
      return;
    }
    answer.then(
      (bytes) => this.#reply(stream, answers, okFrame(id, bytes)),
      (error: unknown) => this.#reply(stream, answers, errorFrame(id, error, this.#log)),
    );
  }

  /** Answer call `id` with `UNKNOWN_MESSAGE`, naming both versions; logged once per peer and message. */
  #answerUnknown(peer: string, stream: Stream, answers: FrameBatch, id: number, what: string): void {
    const { message, text } = receivedUnknown(this.#versions, this.nodeId, peer, 'queue-link', what);
    this.#unknown.report(message, text, 'received');
    this.#reply(stream, answers, errorFrame(id, new QueueLinkError(UNKNOWN_MESSAGE_CODE, text), this.#log));
  }

  /** Queue an answer frame for this turn's write to the caller's stream. */
  #reply(stream: Stream, answers: FrameBatch, frame: Uint8Array): void {
    if (stream.writeStatus !== 'writable') return; // the caller learns from the broken stream
    // A turn's answers go out at most a bound's worth at a time, each checked against the bound.
    if (answers.length > 0 && answers.bytes + frame.byteLength > this.#maxQueuedBytes)
      this.#sendAnswers(stream, answers);
    answers.push(frame, undefined);
    if (answers.length === 1) queueMicrotask(() => this.#sendAnswers(stream, answers));
  }

  #sendAnswers(stream: Stream, answers: FrameBatch): void {
    if (stream.writeStatus !== 'writable') {
      answers.clear();
      return;
    }
    // A caller that does not read its answers: more than the bound waits already. Its stream goes
    // (its calls fail as lost and are retried) rather than answers piling up here without end.
    if (stream.writableNeedsDrain && stream.writeBufferLength > this.#maxQueuedBytes) {
      this.#log.warn(
        { waiting: stream.writeBufferLength, bound: this.#maxQueuedBytes },
        'queue-link answers not read by the caller: closing its stream',
      );
      answers.clear();
      stream.abort(new Error(`queue-link answers not read: ${stream.writeBufferLength} bytes waiting`));
      return;
    }
    const bytes = answers.take();
    if (bytes === undefined) return;
    try {
      stream.send(bytes);
    } catch (error) {
      this.#log.debug({ err: error }, 'queue-link answer not sent');
    }
  }

  readonly #onDisconnect = (event: CustomEvent<{ toString(): string }>): void => {
    const peer = event.detail.toString();
    const link = this.#links.get(peer);
    if (link === undefined) return;
    link.stream = undefined;
    this.#fail(peer, link, 'peer disconnected');
  };
}

/** A call's ok answer, framed. */
function okFrame(id: number, body: Uint8Array): Uint8Array {
  const frame = allocFrame(5 + body.byteLength);
  const at = FRAME_PREFIX_BYTES;
  frame[at] = ANSWER_OK;
  new DataView(frame.buffer).setUint32(at + 1, id);
  frame.set(body, at + 5);
  return frame;
}

/** A call was answered or failed: its share of the turn's deadline timer is done. */
function settled(call: PendingCall): void {
  const deadline = call.deadline;
  if (--deadline.open === 0 && deadline.timer !== undefined) {
    clearTimeout(deadline.timer);
    deadline.timer = undefined;
  }
}

/**
 * What a caller is answered for a handler's `error`: its code and text when it carries a code
 * (cluster errors, AMQP errors), else `INTERNAL` (and the error is logged here).
 */
export function answerError(error: unknown, log: Logger): { readonly code: string; readonly text: string } {
  if (error instanceof ClusterError || hasCode(error))
    return { code: String((error as { code: unknown }).code), text: (error as Error).message };
  log.error({ err: error }, 'queue-link handler failed');
  return { code: 'INTERNAL', text: 'internal error' };
}

function errorFrame(id: number, error: unknown, log: Logger): Uint8Array {
  const { code, text } = answerError(error, log);
  const codeBytes = encoder.encode(code).subarray(0, 255);
  const textBytes = encoder.encode(text).subarray(0, 1024);
  const frame = allocFrame(5 + 1 + codeBytes.byteLength + 2 + textBytes.byteLength);
  const payload = frame.subarray(FRAME_PREFIX_BYTES);
  const view = new DataView(payload.buffer, payload.byteOffset);
  payload[0] = ANSWER_ERROR;
  view.setUint32(1, id);
  payload[5] = codeBytes.byteLength;
  payload.set(codeBytes, 6);
  view.setUint16(6 + codeBytes.byteLength, textBytes.byteLength);
  payload.set(textBytes, 8 + codeBytes.byteLength);
  return frame;
}

/** Errors with a string or numeric code (AMQP errors, NotLeaderError) answer with that code. */
function hasCode(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && (typeof code === 'string' || typeof code === 'number');
}
