import type { Connection, Libp2p, Stream, StreamMessageEvent } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import { PeerUnreachableError } from '@styx/raft';
import type { Logger } from '../logging/logger.ts';
import type { ClusterGater } from './connection-gater.ts';
import { ClusterError, FrameTooLargeError } from './errors.ts';
import { lagTolerantTimeout } from './lag-tolerant-timeout.ts';
import { nodeMultiaddr, peerMultiaddr } from './peer-address.ts';
import type { PeerVersions, UnknownMessage } from './protocol-version.ts';
import { fixedVersions, receivedUnknown, UnknownMessageLog } from './protocol-version.ts';
import { encodeFrame, FrameDecoder, messageChunks } from './raft-frames.ts';

/** The libp2p protocol of cluster RPCs: one stream per call, one request frame, one response frame. */
export const RPC_PROTOCOL = '/styx/cluster-rpc/1.0.0';

/**
 * Default bound on one RPC message (a request or a response, kind and error text included), bytes:
 * 16 MiB. Membership answers and forwarded metadata commands are far smaller; the bound only stops
 * a corrupt or hostile length prefix from making a node buffer more. A larger outgoing request
 * rejects with `FrameTooLargeError`, a larger incoming prefix closes the stream before its payload
 * is buffered (a handler's oversize answer becomes an 'INTERNAL' error).
 */
export const DEFAULT_RPC_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Default time a call waits for its answer, ms, dial included. The responder gives a caller the
 * same time (its own default) to send the request once the stream is open.
 */
export const DEFAULT_RPC_TIMEOUT_MS = 10_000;

/**
 * Calls in flight per connection and direction (libp2p's stream limits for the protocol). A caller
 * past it gets `PeerUnreachableError` for the extra calls; a responder refuses the extra streams.
 */
export const MAX_CONCURRENT_RPC_STREAMS = 256;

/** Bound on a kind and on an error code, UTF-8 bytes (each is length-prefixed by one byte). */
export const MAX_RPC_NAME_BYTES = 255;

/** Bound on an error response's text, UTF-8 bytes: longer texts are cut. */
export const MAX_RPC_ERROR_TEXT_BYTES = 1_024;

/** The error codes this protocol itself answers with (handlers use their own as well). */
export const RpcErrorCode = {
  /** `admit` refused the caller for that kind: the handler never saw the request. */
  forbidden: 'FORBIDDEN',
  /**
   * No handler for that kind on the responder (an older build, or the kind's feature flag is one it
   * lacks): the text names both nodes' cluster protocol versions. The caller gets
   * `RpcUnknownKindError`; the connection and later calls go on.
   */
  unknownKind: 'UNKNOWN_KIND',
  /** The handler failed with something other than an `RpcError` (logged on the responder). */
  internal: 'INTERNAL',
} as const;

/** Answers one kind of call: the request's payload and the caller's proven peer id in, the answer out. */
export type RpcHandler = (payload: Uint8Array, from: string) => Promise<Uint8Array>;

/**
 * Thrown by an `RpcHandler` to answer with an error: the caller's call rejects with an
 * `RpcRemoteError` carrying the same code and text. `code` is short (at most `MAX_RPC_NAME_BYTES`)
 * and stable, e.g. an AMQP reply code as a string ('404') or a symbol ('NOT_LEADER').
 */
export class RpcError extends ClusterError {
  /** Throws `RangeError` when `code` is empty or too long (it could not be sent). */
  constructor(code: string, text: string, options?: ErrorOptions) {
    nameBytes('error code', code);
    super(code, text, options);
  }
}

/** The remote handler answered with an error (`code`, and its text as the message). */
export class RpcRemoteError extends ClusterError {
  /** The responder: a peer id, or the address `callAddress` dialled. */
  readonly peer: string;
  readonly kind: string;
  constructor(code: string, text: string, peer: string, kind: string) {
    super(code, text);
    this.peer = peer;
    this.kind = kind;
  }
}

/**
 * The responder has no handler for the kind (`RpcErrorCode.unknownKind`): it runs another version,
 * or lacks the kind's feature flag. `message` is its text, naming both versions.
 */
export class RpcUnknownKindError extends RpcRemoteError implements UnknownMessage {
  readonly protocol = 'rpc';
  readonly what: string;
  /** This node's version (it sent the call). */
  readonly senderVersion: number | undefined;
  /** The responder's, as its hello said (undefined before it). */
  readonly receiverVersion: number | undefined;
  constructor(text: string, peer: string, kind: string, versions: PeerVersions) {
    super(RpcErrorCode.unknownKind, text, peer, kind);
    this.what = `kind '${kind}'`;
    this.senderVersion = versions.localVersion;
    this.receiverVersion = versions.versionOf(peer);
  }
}

/** No answer within the call's timeout (the stream was open: the peer is reachable but slow). */
export class RpcTimeoutError extends ClusterError {
  readonly peer: string;
  readonly kind: string;
  readonly timeoutMs: number;
  constructor(peer: string, kind: string, timeoutMs: number) {
    super('RPC_TIMEOUT', `${kind} call to ${peer} got no answer within ${timeoutMs} ms`);
    this.peer = peer;
    this.kind = kind;
    this.timeoutMs = timeoutMs;
  }
}

/** An RPC message that does not decode (a malformed request or response). */
export class RpcProtocolError extends ClusterError {
  constructor(detail: string, options?: ErrorOptions) {
    super('RPC_MALFORMED', `malformed cluster rpc message: ${detail}`, options);
  }
}

/** A decoded request. */
export interface RpcRequest {
  readonly kind: string;
  readonly payload: Uint8Array;
}

/** A decoded response: an answer, or a handler's (or the protocol's) error. */
export type RpcResponse =
  | { readonly ok: true; readonly payload: Uint8Array }
  | { readonly ok: false; readonly code: string; readonly text: string };

const RESPONSE_OK = 0;
const RESPONSE_ERROR = 1;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');

/** `name` as UTF-8, checked against `MAX_RPC_NAME_BYTES` (a programming error when it fails). */
function nameBytes(what: string, name: string): Uint8Array {
  const bytes = utf8.encode(name);
  if (bytes.byteLength === 0 || bytes.byteLength > MAX_RPC_NAME_BYTES) {
    throw new RangeError(
      `rpc ${what} must be 1 to ${MAX_RPC_NAME_BYTES} UTF-8 bytes: ${JSON.stringify(name)}`,
    );
  }
  return bytes;
}

/** The `lead` bytes, `[u8 name length][name]`, then `rest`. */
function prefixed(lead: number[], name: Uint8Array, rest: Uint8Array): Uint8Array {
  const out = new Uint8Array(lead.length + 1 + name.byteLength + rest.byteLength);
  out.set(lead, 0);
  out[lead.length] = name.byteLength;
  out.set(name, lead.length + 1);
  out.set(rest, lead.length + 1 + name.byteLength);
  return out;
}

/** Reads `[u8 length][name]` at `offset`: the name and the offset after it. */
function readName(bytes: Uint8Array, offset: number, what: string): [string, number] {
  const length = bytes[offset];
  if (length === undefined || length === 0 || offset + 1 + length > bytes.byteLength) {
    throw new RpcProtocolError(`bad ${what} length`);
  }
  try {
    return [strictUtf8.decode(bytes.subarray(offset + 1, offset + 1 + length)), offset + 1 + length];
  } catch (error) {
    throw new RpcProtocolError(`${what} is not UTF-8`, { cause: error });
  }
}

/** A request message: `[u8 kind length][kind][payload]`. Throws `RangeError` for a bad kind. */
export function encodeRpcRequest(kind: string, payload: Uint8Array): Uint8Array {
  return prefixed([], nameBytes('kind', kind), payload);
}

/** The inverse of `encodeRpcRequest`; throws `RpcProtocolError`. */
export function decodeRpcRequest(bytes: Uint8Array): RpcRequest {
  const [kind, offset] = readName(bytes, 0, 'kind');
  return { kind, payload: bytes.subarray(offset) };
}

/**
 * A response message: `[u8 0][payload]`, or `[u8 1][u8 code length][code][text]` with the text cut
 * to `MAX_RPC_ERROR_TEXT_BYTES`. Throws `RangeError` for a bad code.
 */
export function encodeRpcResponse(response: RpcResponse): Uint8Array {
  if (response.ok) {
    const out = new Uint8Array(1 + response.payload.byteLength);
    out[0] = RESPONSE_OK;
    out.set(response.payload, 1);
    return out;
  }
  const text = utf8.encode(response.text).subarray(0, MAX_RPC_ERROR_TEXT_BYTES);
  return prefixed([RESPONSE_ERROR], nameBytes('error code', response.code), text);
}

/** The inverse of `encodeRpcResponse`; throws `RpcProtocolError`. */
export function decodeRpcResponse(bytes: Uint8Array): RpcResponse {
  switch (bytes[0]) {
    case RESPONSE_OK:
      return { ok: true, payload: bytes.subarray(1) };
    case RESPONSE_ERROR: {
      const [code, offset] = readName(bytes, 1, 'error code');
      return { ok: false, code, text: lenientUtf8.decode(bytes.subarray(offset)) };
    }
    default:
      throw new RpcProtocolError(`unknown response status ${String(bytes[0])}`);
  }
}

export interface ClusterRpcOptions {
  /** The node's started libp2p host (see `createClusterNode`). */
  readonly node: Libp2p;
  readonly logger: Logger;
  /** See `DEFAULT_RPC_MAX_MESSAGE_BYTES`. */
  readonly maxMessageBytes?: number;
  /** See `DEFAULT_RPC_TIMEOUT_MS`; a call may give its own. */
  readonly timeoutMs?: number;
  /**
   * Whether `peerId` may make a call of `kind` here (default: every peer the gater let connect).
   * Checked before the request reaches any handler; a refused call is answered 'FORBIDDEN' and
   * logged at warn.
   */
  readonly admit?: (peerId: string, kind: string) => boolean;
  /**
   * The node's gater. With it, each call lets its own dial through to a peer the gater does not
   * (yet) admit: the node a join asks first, whose id is unknown, or a leader the membership has
   * not caught up with. Without it, such calls need the gater `openToJoins`.
   */
  readonly gater?: ClusterGater;
  /** Versions to name in the answer to an unknown kind (default: this build's, peers' unknown). */
  readonly versions?: PeerVersions;
}

const ignore = (): void => {};
/** Attempts to open a call's stream on a connection (see `#openStream`). */
const OPEN_ATTEMPTS = 3;
/** Pause before a second attempt to open a stream (times the attempt), ms. */
const OPEN_RETRY_MS = 20;
const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * Request/response calls between cluster nodes (`RPC_PROTOCOL`), one libp2p stream per call: the
 * caller writes one request frame (`encodeFrame` of `encodeRpcRequest`) and closes its side; the
 * responder checks `admit`, runs the kind's handler and writes one response frame, then closes.
 *
 * - The responder never lets a peer crash it: a malformed or oversize frame, a request that does
 *   not arrive in time or is followed by more bytes closes that stream only (logged at warn); a
 *   handler that throws something other than an `RpcError` is answered 'INTERNAL' (logged at
 *   error).
 * - A call rejects with `RpcRemoteError` (the handler's or the protocol's error code), with
 *   `RpcTimeoutError` when the stream opened but no answer came in time, and with the Raft layer's
 *   `PeerUnreachableError` when the peer has no known address, cannot be dialled in time, or broke
 *   the stream off.
 * - Callers are identified by the proven peer id of their connection, never by anything they send.
 */
export class ClusterRpc {
  readonly #node: Libp2p;
  readonly #log: Logger;
  readonly #maxMessageBytes: number;
  readonly #timeoutMs: number;
  readonly #admit: (peerId: string, kind: string) => boolean;
  readonly #gater: ClusterGater | undefined;
  readonly #versions: PeerVersions;
  readonly #unknown: UnknownMessageLog;
  readonly #handlers = new Map<string, RpcHandler>();
  /** Targets with a first stream being opened, and targets where one opened before. */
  readonly #firstOpen = new Map<string, Promise<void>>();
  readonly #openedOnce = new Set<string>();
  readonly #addresses = new Map<string, Multiaddr>();
  readonly #streams = new Set<Stream>();
  /** Aborts the dials and calls in progress at close. */
  readonly #closing = new AbortController();
  #closed = false;

  private constructor(options: ClusterRpcOptions) {
    this.#node = options.node;
    this.#log = options.logger.child({ component: 'cluster-rpc' });
    this.#maxMessageBytes = options.maxMessageBytes ?? DEFAULT_RPC_MAX_MESSAGE_BYTES;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
    this.#admit = options.admit ?? (() => true);
    this.#gater = options.gater;
    this.#versions = options.versions ?? fixedVersions();
    this.#unknown = new UnknownMessageLog(this.#log);
  }

  /** Register the protocol on `options.node` and start answering calls. */
  static async start(options: ClusterRpcOptions): Promise<ClusterRpc> {
    const rpc = new ClusterRpc(options);
    await options.node.handle(RPC_PROTOCOL, (stream, connection) => rpc.#accept(stream, connection), {
      maxInboundStreams: MAX_CONCURRENT_RPC_STREAMS,
      maxOutboundStreams: MAX_CONCURRENT_RPC_STREAMS,
    });
    return rpc;
  }

  /** Answer calls of `kind` with `handler`. One handler per kind: a second one throws. */
  handle(kind: string, handler: RpcHandler): void {
    nameBytes('kind', kind);
    if (this.#handlers.has(kind))
      throw new Error(`a handler for rpc kind ${JSON.stringify(kind)} is already set`);
    this.#handlers.set(kind, handler);
  }

  /** Where `peerId` listens, `host:port` or a multiaddr (throws `PeerAddressError`). Replaces an earlier one. */
  addPeer(peerId: string, address: string): void {
    this.#addresses.set(peerId, nodeMultiaddr(peerId, address));
  }

  /** Forget `peerId`'s address: later calls to it reject with `PeerUnreachableError`. */
  removePeer(peerId: string): void {
    this.#addresses.delete(peerId);
  }

  /** Call `kind` on `peerId` (at the address given to `addPeer`); resolves with the handler's answer. */
  async call(peerId: string, kind: string, payload: Uint8Array, timeoutMs?: number): Promise<Uint8Array> {
    const address = this.#addresses.get(peerId);
    if (address === undefined) throw new PeerUnreachableError(peerId);
    const { response } = await this.#call(peerId, address, { peer: peerId }, kind, payload, timeoutMs);
    return response;
  }

  /**
   * Call `kind` on whichever node listens at `address` (`host:port` or a multiaddr without a peer
   * id): the first contact of a join, before the caller knows who answers. Resolves with the
   * answer and the responder's peer id, as proven by the connection's handshake.
   */
  async callAddress(
    address: string,
    kind: string,
    payload: Uint8Array,
    timeoutMs?: number,
  ): Promise<{ peerId: string; response: Uint8Array }> {
    return this.#call(address, peerMultiaddr(address), { address: true }, kind, payload, timeoutMs);
  }

  /** Stop answering and calling: unregister the protocol, abort every stream and pending call. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    const closed = new Error('cluster rpc closed');
    for (const stream of this.#streams) stream.abort(closed);
    this.#streams.clear();
    await this.#node.unhandle(RPC_PROTOCOL).catch(ignore);
  }

  // ------------------------------------------------------------------------------------ caller

  async #call(
    target: string,
    address: Multiaddr,
    allowance: Parameters<ClusterGater['allowOutbound']>[0],
    kind: string,
    payload: Uint8Array,
    timeoutMs: number | undefined,
  ): Promise<{ peerId: string; response: Uint8Array }> {
    if (this.#closed) throw new PeerUnreachableError(target);
    const request = encodeRpcRequest(kind, payload);
    if (request.byteLength > this.#maxMessageBytes) {
      throw new FrameTooLargeError(request.byteLength, this.#maxMessageBytes);
    }
    const timeout = timeoutMs ?? this.#timeoutMs;
    // Lag-tolerant: a busy moment of this process does not count against the peer (see there).
    const deadline = lagTolerantTimeout(timeout);
    try {
      return await this.#callWithin(target, address, allowance, kind, request, timeout, deadline.signal);
    } finally {
      deadline.clear();
    }
  }

  async #callWithin(
    target: string,
    address: Multiaddr,
    allowance: Parameters<ClusterGater['allowOutbound']>[0],
    kind: string,
    request: Uint8Array,
    timeout: number,
    deadline: AbortSignal,
  ): Promise<{ peerId: string; response: Uint8Array }> {
    const signal = AbortSignal.any([deadline, this.#closing.signal]);
    let connection: Connection;
    let stream: Stream;
    const release = this.#gater?.allowOutbound(allowance);
    try {
      // Until a first stream opened on a connection to this target, calls wait for it: streams
      // opened in a burst while a new connection is still being set up get reset by the remote.
      const first = this.#firstOpen.get(target);
      if (first !== undefined) await untilAborted(first, signal).catch(ignore);
      let opened: () => void = ignore;
      if (!this.#openedOnce.has(target) && !this.#firstOpen.has(target)) {
        this.#firstOpen.set(
          target,
          new Promise<void>((resolve) => {
            opened = resolve;
          }),
        );
      }
      try {
        connection = await this.#node.dial(address, { signal });
        stream = await this.#openStream(connection, signal);
        this.#openedOnce.add(target);
      } finally {
        if (opened !== ignore) {
          this.#firstOpen.delete(target);
          opened();
        }
      }
    } catch (error) {
      this.#log.debug({ peer: target, kind, err: error }, 'cannot open a cluster rpc stream');
      throw new PeerUnreachableError(target);
    } finally {
      release?.();
    }
    if (this.#closed) {
      stream.abort(new Error('cluster rpc closed'));
      throw new PeerUnreachableError(target);
    }
    this.#streams.add(stream);
    try {
      const response = await this.#exchange(stream, request, signal, target, kind, timeout);
      return { peerId: connection.remotePeer.toString(), response };
    } finally {
      this.#streams.delete(stream);
    }
  }

  /**
   * Open the call's stream. A stream reset while it opens (a burst of first calls racing the new
   * connection's setup on the remote side) is opened again, up to `OPEN_ATTEMPTS` times: nothing
   * was sent on it, so this never repeats a request.
   */
  async #openStream(connection: Connection, signal: AbortSignal): Promise<Stream> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await untilAborted(
          connection.newStream(RPC_PROTOCOL, { signal, maxOutboundStreams: MAX_CONCURRENT_RPC_STREAMS }),
          signal,
          (late) => late.abort(new Error('rpc call gave up')),
        );
      } catch (error) {
        if (signal.aborted || attempt >= OPEN_ATTEMPTS || connection.status !== 'open') throw error;
        await new Promise((resolve) => setTimeout(resolve, OPEN_RETRY_MS * attempt));
      }
    }
  }

  /** Write the request, half-close, and wait for the one response frame. */
  #exchange(
    stream: Stream,
    request: Uint8Array,
    signal: AbortSignal,
    target: string,
    kind: string,
    timeout: number,
  ): Promise<Uint8Array> {
    return new Promise<Uint8Array>((resolve, reject) => {
      const frames = new FrameDecoder(this.#maxMessageBytes);
      let settled = false;
      const settle = (outcome: { payload: Uint8Array } | { error: Error }): void => {
        if (settled) return;
        settled = true;
        stream.removeEventListener('message', onMessage);
        stream.removeEventListener('close', onClose);
        signal.removeEventListener('abort', onAbort);
        if ('payload' in outcome) resolve(outcome.payload);
        else reject(outcome.error);
      };
      const onMessage = (event: StreamMessageEvent): void => {
        let response: RpcResponse | undefined;
        try {
          for (const chunk of messageChunks(event.data)) {
            const [frame] = frames.push(chunk);
            if (frame !== undefined) {
              response = decodeRpcResponse(frame);
              break;
            }
          }
        } catch (error) {
          this.#log.warn(
            { peer: target, kind, err: error },
            'malformed cluster rpc response: closing the stream',
          );
          settle({ error: error instanceof RpcProtocolError ? error : new RpcProtocolError(String(error)) });
          stream.abort(asError(error));
          return;
        }
        if (response === undefined) return;
        settle(
          response.ok ? { payload: response.payload } : { error: this.#remoteError(response, target, kind) },
        );
      };
      const onClose = (): void => settle({ error: new PeerUnreachableError(target) });
      const onAbort = (): void => {
        const error = this.#closed
          ? new PeerUnreachableError(target)
          : new RpcTimeoutError(target, kind, timeout);
        // Settled first: the abort fires the stream's 'close' at once.
        settle({ error });
        stream.abort(error);
      };
      stream.addEventListener('message', onMessage);
      stream.addEventListener('close', onClose);
      signal.addEventListener('abort', onAbort);
      if (signal.aborted) {
        onAbort();
        return;
      }
      // Queued whole even when `send` reports a full buffer; `close` flushes it, then half-closes.
      stream.send(encodeFrame(request));
      stream.close({ signal }).catch(ignore);
    });
  }

  #remoteError(response: { code: string; text: string }, target: string, kind: string): RpcRemoteError {
    if (response.code !== RpcErrorCode.unknownKind)
      return new RpcRemoteError(response.code, response.text, target, kind);
    const error = new RpcUnknownKindError(response.text, target, kind, this.#versions);
    this.#unknown.report(error, response.text, 'refused by the peer');
    return error;
  }

  // --------------------------------------------------------------------------------- responder

  #accept(stream: Stream, connection: Connection): void {
    if (this.#closed) {
      stream.abort(new Error('cluster rpc closed'));
      return;
    }
    const peer = connection.remotePeer.toString();
    const frames = new FrameDecoder(this.#maxMessageBytes);
    /** A whole request was read (or the stream was dropped): nothing more is expected. */
    let received = false;
    const drop = (reason: unknown): void => {
      received = true;
      clearTimeout(timer);
      this.#log.warn({ peer, err: reason }, 'malformed cluster rpc request: closing its stream');
      stream.abort(asError(reason));
    };
    const timer = setTimeout(() => {
      this.#log.warn({ peer }, 'no cluster rpc request in time: closing its stream');
      stream.abort(new Error('no request in time'));
    }, this.#timeoutMs);
    this.#streams.add(stream);
    stream.addEventListener('close', () => {
      clearTimeout(timer);
      this.#streams.delete(stream);
    });
    stream.addEventListener('remoteCloseWrite', () => {
      if (!received) drop(new RpcProtocolError('the stream ended before a whole request'));
    });
    stream.addEventListener('message', (event) => {
      if (received) {
        if (stream.status === 'open') drop(new RpcProtocolError('bytes after the request'));
        return;
      }
      let request: RpcRequest;
      try {
        const payloads: Uint8Array[] = [];
        for (const chunk of messageChunks(event.data)) payloads.push(...frames.push(chunk));
        const [frame, extra] = payloads;
        if (frame === undefined) return;
        if (extra !== undefined) throw new RpcProtocolError('more than one request on a stream');
        request = decodeRpcRequest(frame);
      } catch (error) {
        drop(error);
        return;
      }
      received = true;
      clearTimeout(timer);
      this.#serve(stream, peer, request).catch((error: unknown) => {
        this.#log.error({ peer, kind: request.kind, err: error }, 'cluster rpc answer failed');
        stream.abort(asError(error));
      });
    });
  }

  async #serve(stream: Stream, peer: string, request: RpcRequest): Promise<void> {
    const response = await this.#answer(peer, request);
    let frame = encodeRpcResponse(response);
    if (frame.byteLength > this.#maxMessageBytes) {
      this.#log.error(
        { peer, kind: request.kind, bytes: frame.byteLength, limit: this.#maxMessageBytes },
        'cluster rpc answer exceeds the message bound',
      );
      frame = encodeRpcResponse({ ok: false, code: RpcErrorCode.internal, text: 'answer too large' });
    }
    try {
      if (this.#closed || stream.writeStatus !== 'writable') return;
      if (!stream.send(encodeFrame(frame))) await stream.onDrain({ signal: this.#closing.signal });
      await stream.close({ signal: this.#closing.signal });
    } catch (error) {
      this.#log.debug({ peer, kind: request.kind, err: error }, 'cannot send a cluster rpc answer');
      stream.abort(asError(error));
    }
  }

  /** `admit`, then the kind's handler; every failure becomes an error response. */
  async #answer(peer: string, { kind, payload }: RpcRequest): Promise<RpcResponse> {
    let admitted: boolean;
    try {
      admitted = this.#admit(peer, kind);
    } catch (error) {
      this.#log.error({ peer, kind, err: error }, 'cluster rpc admission check failed');
      admitted = false;
    }
    if (!admitted) {
      this.#log.warn({ peer, kind }, 'cluster rpc refused: the peer may not make this call');
      return { ok: false, code: RpcErrorCode.forbidden, text: `${kind} is not allowed from ${peer}` };
    }
    const handler = this.#handlers.get(kind);
    if (handler === undefined) {
      const self = this.#node.peerId.toString();
      const { message, text } = receivedUnknown(this.#versions, self, peer, 'rpc', `kind '${kind}'`);
      this.#unknown.report(message, text, 'received');
      return { ok: false, code: RpcErrorCode.unknownKind, text };
    }
    try {
      return { ok: true, payload: await handler(payload, peer) };
    } catch (error) {
      if (error instanceof RpcError) return { ok: false, code: error.code, text: error.message };
      this.#log.error({ peer, kind, err: error }, 'cluster rpc handler failed');
      return { ok: false, code: RpcErrorCode.internal, text: `${kind} failed on the responder` };
    }
  }
}

/**
 * `opening`, or a rejection as soon as `signal` aborts. libp2p does not always give up opening a
 * stream when its signal aborts (a paused peer that never answers the protocol negotiation holds
 * it until the connection's own ping fails, seconds later); a stream that opens after all is
 * aborted unused, so a request is never sent after its call gave up.
 */
function untilAborted<T>(
  opening: Promise<T>,
  signal: AbortSignal,
  discard: (late: T) => void = ignore,
): Promise<T> {
  if (signal.aborted) {
    opening.then(discard, ignore);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = (): void => {
      settled = true;
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    opening.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) discard(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!settled) reject(error);
      },
    );
  });
}
