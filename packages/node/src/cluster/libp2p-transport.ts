import type { Connection, Libp2p, PeerId, Stream } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import type { PeerBatch, Transport } from '@styx/raft';
import { decodePeerBatch, encodePeerBatch, PeerUnreachableError } from '@styx/raft';
import type { Logger } from '../logging/logger.ts';
import { FrameTooLargeError } from './errors.ts';
import { FrameBatch } from './frame-batch.ts';
import { nodeMultiaddr } from './peer-address.ts';
import type { PeerVersions } from './protocol-version.ts';
import {
  fixedVersions,
  receivedUnknown,
  UnknownMessageLog,
  UnknownPeerMessageError,
} from './protocol-version.ts';
import {
  decodeUnknownFrameAnswer,
  encodeFrame,
  encodeUnknownFrameAnswer,
  FRAME_PREFIX_BYTES,
  FrameDecoder,
  messageChunks,
  RAFT_FRAME_PEER_BATCH,
  RAFT_FRAME_UNKNOWN_ANSWER,
} from './raft-frames.ts';

/** The libp2p protocol of Raft batch streams. */
export const RAFT_PROTOCOL = '/styx/raft/1.0.0';

/**
 * Default bound on one Raft frame (one `PeerBatch`), bytes: 64 MiB, the host's default bound on
 * bytes in flight (`DEFAULT_MAX_BYTES_IN_FLIGHT`), so any batch a host can form fits. A larger
 * outgoing batch is refused (its send rejects and Raft retries, its leaders probing with smaller
 * messages); a larger incoming prefix closes the stream before its payload is buffered.
 */
export const DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/**
 * Default time a send waits for a connection and a stream to a peer, ms. A dead peer's sends fail
 * after it (together: the sends queued behind one dial share it), and Raft counts them unreachable.
 */
export const DEFAULT_DIAL_TIMEOUT_MS = 5_000;

/**
 * Default time a send waits for the stream to a peer to drain, ms. Sends to one peer queue behind
 * each other (order), so one drain that never comes — a peer that stopped reading (paused, wedged)
 * or a connection black-holed by a partition, whose TCP retransmissions back off to tens of
 * seconds — would hold every later send to that peer, and with them the bytes the host counts in
 * flight node-wide (so every group's proposals). Past it the stream is aborted: the sends queued on
 * it fail (Raft marks the peer unreachable and probes) and the next send opens a new stream.
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5_000;

export interface Libp2pTransportOptions {
  /** The node's started libp2p host (see `createClusterNode`). */
  readonly node: Libp2p;
  readonly logger: Logger;
  /** See `DEFAULT_MAX_FRAME_BYTES`. */
  readonly maxFrameBytes?: number;
  /** See `DEFAULT_DIAL_TIMEOUT_MS`. */
  readonly dialTimeoutMs?: number;
  /** See `DEFAULT_DRAIN_TIMEOUT_MS`. */
  readonly drainTimeoutMs?: number;
  /**
   * Whether a peer may open Raft streams to this node (default: every peer the gater let connect).
   * A refused peer's inbound stream is closed before any of its bytes is read, and logged. With a
   * gater open to joins, pass `gater.isMember`: a stranger may connect to ask for a join, but
   * never feed this node's Raft groups.
   */
  readonly admit?: (peerId: string) => boolean;
  /** Versions to name in the answer to an unknown frame (default: this build's, peers' unknown). */
  readonly versions?: PeerVersions;
}

/** How a send learns that its frame was written (and drained), or not. */
interface Settle {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** This node's side of the Raft stream to one peer. */
interface OutboundLink {
  /** The open stream, once a dial succeeded; dropped when it closes (the next send dials again). */
  stream: Stream | undefined;
  /** The dial in progress: every send made meanwhile waits on it, and fails with it. */
  opening: Promise<Stream> | undefined;
  /**
   * Frames sent while a write (or the dial before it) is under way, in send order, and their
   * senders: the next write takes them all, as one buffer.
   */
  readonly waiting: FrameBatch;
  settles: Settle[];
  /** A write, or the dial or drain it waits on, is under way (`#writeWaiting` runs). */
  writing: boolean;
}

const ignore = (): void => {};

/**
 * The Raft `Transport` over libp2p: one outbound protocol stream per peer (`RAFT_PROTOCOL`),
 * opened on the first send and again on a later send after it closed. Each batch is one frame, a
 * u32 big-endian length then the `encodePeerBatch` bytes.
 *
 * - Order: sends to one peer are written one after the other on that one stream, so a peer reads
 *   them in send order; a batch lost with a broken stream is never re-sent (at most once).
 * - One write per peer at a time: frames sent while the previous write waits (for its stream's
 *   dial or drain) go out together in the next one, a single `Stream.send` — each costs a muxer
 *   frame, a cipher call and socket writes of its own whatever its size.
 * - `send` resolves once the frame is handed to the stream and the stream's buffer has drained,
 *   and rejects with `PeerUnreachableError` when the peer has no known address, cannot be dialled
 *   within the dial timeout, or the stream broke.
 * - `onPeerDown` fires when the last connection to a peer closes.
 * - Inbound streams from a peer that `admit` refuses are closed unread (and logged).
 * - An inbound frame that does not decode (or whose batch claims another sender than the proven
 *   peer id of its connection) closes that stream only and is logged; the connection and every
 *   other peer's streams go on.
 * - Frame kinds (a payload's first byte): `RAFT_FRAME_PEER_BATCH` is the only one this version
 *   sends. A frame of another kind (a newer peer's) is skipped, not decoded: the receiver answers
 *   it on the same stream with `RAFT_FRAME_UNKNOWN_ANSWER`, naming both versions, logs it once per
 *   peer and kind, and goes on reading. The opener logs such answers the same way.
 *
 * Node ids are peer id strings. Peers are reached at the addresses given to `addPeer`: there is no
 * discovery, the membership says where each node listens.
 */
export class Libp2pTransport implements Transport {
  readonly nodeId: string;
  readonly #node: Libp2p;
  readonly #log: Logger;
  readonly #maxFrameBytes: number;
  readonly #dialTimeoutMs: number;
  readonly #drainTimeoutMs: number;
  readonly #admit: (peerId: string) => boolean;
  readonly #versions: PeerVersions;
  readonly #unknown: UnknownMessageLog;
  readonly #addresses = new Map<string, Multiaddr>();
  readonly #links = new Map<string, OutboundLink>();
  readonly #inbound = new Set<Stream>();
  /** Aborts the dials and drains in progress at close. */
  readonly #closing = new AbortController();
  #receive: ((batch: PeerBatch) => void) | undefined;
  #heardFrom: ((peer: string) => void) | undefined;
  #peerDown: ((peer: string) => void) | undefined;
  #closed = false;
  #writes = 0;

  private constructor(options: Libp2pTransportOptions) {
    this.#node = options.node;
    this.nodeId = options.node.peerId.toString();
    this.#log = options.logger.child({ component: 'raft-transport' });
    this.#maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.#dialTimeoutMs = options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS;
    this.#drainTimeoutMs = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    this.#admit = options.admit ?? (() => true);
    this.#versions = options.versions ?? fixedVersions();
    this.#unknown = new UnknownMessageLog(this.#log);
  }

  /** Register the Raft protocol on `options.node` and start listening for peers' streams. */
  static async start(options: Libp2pTransportOptions): Promise<Libp2pTransport> {
    const transport = new Libp2pTransport(options);
    await options.node.handle(RAFT_PROTOCOL, (stream, connection) => transport.#accept(stream, connection), {
      // One stream per peer is the norm; a few more cover a reconnect racing the old stream's close.
      maxInboundStreams: 8,
    });
    options.node.addEventListener('peer:disconnect', transport.#onDisconnect);
    return transport;
  }

  /**
   * Where `nodeId` listens: `host:port` or a multiaddr (throws `PeerAddressError` when it is
   * neither, or when `nodeId` is not a peer id). Replaces an earlier address; the stream already
   * open, if any, stays in use until it closes.
   */
  addPeer(nodeId: string, address: string): void {
    this.#addresses.set(nodeId, nodeMultiaddr(nodeId, address));
  }

  /**
   * Open a connection to `nodeId` now, without sending (Raft opens its stream on a first send;
   * gossip needs connections to spread events), within `timeoutMs` (default: the dial timeout).
   * Rejects with `PeerUnreachableError`.
   */
  async connect(nodeId: string, timeoutMs = this.#dialTimeoutMs): Promise<void> {
    const address = this.#addresses.get(nodeId);
    if (address === undefined || this.#closed) throw new PeerUnreachableError(nodeId);
    try {
      await this.#node.dial(address, { signal: this.#dialSignal(timeoutMs) });
    } catch (error) {
      this.#log.debug({ peer: nodeId, err: error }, 'cannot connect to the peer');
      throw new PeerUnreachableError(nodeId);
    }
  }

  /** Forget `nodeId`'s address and close the stream to it (the node left the cluster). */
  removePeer(nodeId: string): void {
    this.#addresses.delete(nodeId);
    const link = this.#links.get(nodeId);
    this.#links.delete(nodeId);
    link?.stream?.abort(new Error('peer removed'));
  }

  send(peer: string, batch: PeerBatch): Promise<void> {
    if (this.#closed) return Promise.reject(new PeerUnreachableError(peer));
    // Encoded now: the caller may reuse the batch's objects once `send` returns. Encoded after
    // room for the frame's prefix, written in place (no copy of the batch into a frame).
    const frame = encodePeerBatch(batch, FRAME_PREFIX_BYTES);
    const payloadBytes = frame.byteLength - FRAME_PREFIX_BYTES;
    if (payloadBytes > this.#maxFrameBytes) {
      return Promise.reject(new FrameTooLargeError(payloadBytes, this.#maxFrameBytes));
    }
    new DataView(frame.buffer, frame.byteOffset, FRAME_PREFIX_BYTES).setUint32(0, payloadBytes);
    const link = this.#link(peer);
    const written = new Promise<void>((resolve, reject) => {
      link.waiting.push(frame, undefined);
      link.settles.push({ resolve, reject });
    });
    if (!link.writing) void this.#writeWaiting(peer, link);
    return written;
  }

  /** Write the link's waiting frames, all of them each time, until none is left. */
  async #writeWaiting(peer: string, link: OutboundLink): Promise<void> {
    link.writing = true;
    try {
      while (link.waiting.length > 0) {
        let failure: unknown;
        let settles: Settle[] = [];
        try {
          const stream = await this.#streamFor(peer, link);
          settles = link.settles;
          link.settles = [];
          await this.#write(peer, link, stream, link.waiting.take() as Uint8Array);
        } catch (error) {
          failure = error;
        }
        if (failure === undefined) {
          for (const settle of settles) settle.resolve();
          continue;
        }
        // A dial or a write that failed fails every frame waiting meanwhile too (they were queued
        // on that stream); the next send dials again.
        settles.push(...link.settles);
        link.settles = [];
        link.waiting.clear();
        for (const settle of settles) settle.reject(failure);
      }
    } finally {
      link.writing = false;
    }
  }

  /** Frames written to outbound Raft streams so far, one `Stream.send` each (see `Transport.writes`). */
  get writes(): number {
    return this.#writes;
  }

  onReceive(handler: (batch: PeerBatch) => void): void {
    this.#receive = handler;
  }

  /** `handler(peer)` runs for every sound Raft batch received from `peer` (liveness evidence). */
  onHeardFrom(handler: (peer: string) => void): void {
    this.#heardFrom = handler;
  }

  /**
   * Tell the host that `peer` is down although its connection is open (it stopped answering: a
   * paused or wedged process keeps its sockets). The host wakes the groups that peer leads, so
   * they elect a new leader if it is really gone; the next send to it opens a new stream. The old
   * stream is aborted, so that sends waiting on its drain fail now instead of holding the sends
   * queued behind them.
   */
  reportDown(peer: string): void {
    const link = this.#links.get(peer);
    if (link !== undefined) {
      const stream = link.stream;
      link.stream = undefined;
      stream?.abort(new Error('peer reported down'));
    }
    if (!this.#closed) this.#peerDown?.(peer);
  }

  onPeerDown(handler: (peer: string) => void): void {
    this.#peerDown = handler;
  }

  /** Stop sending and receiving: unregister the protocol and abort every Raft stream. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#node.removeEventListener('peer:disconnect', this.#onDisconnect);
    const closed = new Error('raft transport closed');
    for (const link of this.#links.values()) link.stream?.abort(closed);
    for (const stream of this.#inbound) stream.abort(closed);
    this.#links.clear();
    this.#inbound.clear();
    await this.#node.unhandle(RAFT_PROTOCOL).catch(ignore);
  }

  #link(peer: string): OutboundLink {
    let link = this.#links.get(peer);
    if (link === undefined) {
      link = {
        stream: undefined,
        opening: undefined,
        waiting: new FrameBatch(),
        settles: [],
        writing: false,
      };
      this.#links.set(peer, link);
    }
    return link;
  }

  /** The link's open stream, or the dial under way (starting one when there is none). */
  #streamFor(peer: string, link: OutboundLink): Promise<Stream> {
    const open = link.stream;
    if (open !== undefined && open.writeStatus === 'writable') return Promise.resolve(open);
    if (link.opening !== undefined) return link.opening;
    const opening = this.#open(peer, link);
    const settled = (): void => {
      if (link.opening === opening) link.opening = undefined;
    };
    link.opening = opening;
    opening.then(settled, settled);
    return opening;
  }

  #dialSignal(timeoutMs = this.#dialTimeoutMs): AbortSignal {
    return AbortSignal.any([AbortSignal.timeout(timeoutMs), this.#closing.signal]);
  }

  /** Only made when a peer's stream is full, not per send. */
  #drainSignal(): AbortSignal {
    return AbortSignal.any([AbortSignal.timeout(this.#drainTimeoutMs), this.#closing.signal]);
  }

  async #open(peer: string, link: OutboundLink): Promise<Stream> {
    try {
      const address = this.#addresses.get(peer);
      if (address === undefined) throw new PeerUnreachableError(peer);
      const stream = await this.#node.dialProtocol(address, RAFT_PROTOCOL, { signal: this.#dialSignal() });
      if (this.#closed || this.#links.get(peer) !== link) {
        stream.abort(new Error('raft transport closed'));
        throw new PeerUnreachableError(peer);
      }
      link.stream = stream;
      stream.addEventListener('close', () => {
        if (link.stream === stream) link.stream = undefined;
      });
      this.#readAnswers(peer, stream);
      return stream;
    } catch (error) {
      if (error instanceof PeerUnreachableError) throw error;
      this.#log.debug({ peer, err: error }, 'cannot open a raft stream to the peer');
      throw new PeerUnreachableError(peer);
    }
  }

  async #write(peer: string, link: OutboundLink, stream: Stream, frame: Uint8Array): Promise<void> {
    try {
      if (this.#closed) throw new Error('raft transport closed');
      // `send` queues the frame even when it returns false; waiting for the drain bounds what
      // this node buffers for a slow peer to the sends the host still counts as in flight.
      this.#writes++;
      if (!stream.send(frame)) await stream.onDrain({ signal: this.#drainSignal() });
    } catch (error) {
      if (link.stream === stream) link.stream = undefined;
      // A drain that timed out leaves frames in a stream nobody reads: abort it (see
      // DEFAULT_DRAIN_TIMEOUT_MS); the sends queued behind fail at once on the aborted stream.
      if (stream.status === 'open') stream.abort(new Error('raft stream did not drain'));
      this.#log.debug({ peer, err: error }, 'raft stream to the peer broke');
      throw new PeerUnreachableError(peer);
    }
  }

  /** What the peer writes back on this node's stream: answers to frames it did not know. */
  #readAnswers(peer: string, stream: Stream): void {
    const frames = new FrameDecoder(this.#maxFrameBytes);
    stream.addEventListener('message', (event) => {
      try {
        for (const chunk of messageChunks(event.data)) {
          for (const payload of frames.push(chunk)) {
            if (payload[0] !== RAFT_FRAME_UNKNOWN_ANSWER) continue; // a later version's: nothing to do
            const { kind, text } = decodeUnknownFrameAnswer(payload);
            const details = {
              protocol: 'raft',
              what: `frame kind ${kind}`,
              peer,
              senderVersion: this.#versions.localVersion,
              receiverVersion: this.#versions.versionOf(peer),
            } as const;
            const error = new UnknownPeerMessageError(details, text);
            this.#unknown.report(error, error.message, 'refused by the peer');
          }
        }
      } catch (error) {
        this.#log.debug({ peer, err: error }, 'unreadable answer on a raft stream: ignored');
      }
    });
  }

  /** A frame of a kind this version does not know: answered on its stream, which goes on. */
  #answerUnknown(peer: string, stream: Stream, kind: number): void {
    const self = this.nodeId;
    const { message, text } = receivedUnknown(this.#versions, self, peer, 'raft', `frame kind ${kind}`);
    this.#unknown.report(message, text, 'received');
    // A sender that does not read its answers gets no more of them, rather than a growing buffer here.
    if (stream.writeStatus === 'writable' && !stream.writableNeedsDrain) {
      stream.send(encodeFrame(encodeUnknownFrameAnswer(kind, text)));
    }
  }

  #accept(stream: Stream, connection: Connection): void {
    if (this.#closed) {
      stream.abort(new Error('raft transport closed'));
      return;
    }
    const peer = connection.remotePeer.toString();
    if (!this.#admit(peer)) {
      this.#log.warn({ peer }, 'raft stream refused: the peer is not a cluster member');
      stream.abort(new Error('not a cluster member'));
      return;
    }
    const frames = new FrameDecoder(this.#maxFrameBytes);
    this.#inbound.add(stream);
    stream.addEventListener('close', () => this.#inbound.delete(stream));
    stream.addEventListener('message', (event) => {
      const batches: PeerBatch[] = [];
      let failure: unknown;
      try {
        for (const chunk of messageChunks(event.data)) {
          for (const payload of frames.push(chunk)) {
            const kind = payload[0];
            if (kind !== RAFT_FRAME_PEER_BATCH && kind !== undefined) {
              this.#answerUnknown(peer, stream, kind);
              continue;
            }
            const batch = decodePeerBatch(payload);
            if (batch.from !== peer) throw new Error(`batch claims to come from ${batch.from}`);
            batches.push(batch);
          }
        }
      } catch (error) {
        failure = error;
      }
      // The batches before a bad frame are sound: deliver them, then drop the stream.
      if (batches.length > 0 && !this.#closed) this.#heardFrom?.(peer);
      for (const batch of batches) {
        if (!this.#closed) this.#receive?.(batch);
      }
      if (failure !== undefined) {
        this.#log.warn({ peer, err: failure }, 'malformed raft frame from a peer: closing its stream');
        stream.abort(failure instanceof Error ? failure : new Error(String(failure)));
      }
    });
  }

  readonly #onDisconnect = (event: CustomEvent<PeerId>): void => {
    const peer = event.detail.toString();
    const link = this.#links.get(peer);
    if (link !== undefined) link.stream = undefined;
    if (!this.#closed) this.#peerDown?.(peer);
  };
}
