/**
 * The hello: once per connection, two nodes tell each other their cluster protocol version and the
 * feature flags their build supports, on a protocol of its own (`HELLO_PROTOCOL`). The Raft stream,
 * the cluster RPC, the queue link and gossip all share it rather than each opening with a hello of
 * their own:
 *
 * - libp2p already versions every stream: multistream-select negotiates its protocol id
 *   (`/styx/raft/1.0.0`), and a new framing gets a new id served next to the old. What is left to
 *   tell is what the build knows, which is the node's, the same for each of its streams.
 * - The cluster RPC opens a stream per call (a ping every second per member): a hello on each
 *   would cost every call; gossip runs on gossipsub's streams, which carry no frames of ours.
 * - So no frame of any stream carries a version: the hot paths cost nothing more.
 *
 * Exchange: on each new connection (`peer:connect`) a node opens a hello stream and writes one
 * frame (`encodeFrame` of the JSON `{"version": 2, "flags": ["..."]}`); the other records it,
 * answers with its own and closes. A peer from before the hello refuses the protocol id: it is
 * recorded as `LEGACY_PROTOCOL_VERSION` with no flags. A peer's hello is forgotten when its last
 * connection closes (a restarted node says hello again, maybe as another version).
 */
import type { Connection, Libp2p, PeerId, Stream, StreamMessageEvent } from '@libp2p/interface';
import type { Logger } from '../logging/logger.ts';
import { ClusterError } from './errors.ts';
import type { NodeBuild } from './feature-flags.ts';
import type { PeerVersions } from './protocol-version.ts';
import { LEGACY_PROTOCOL_VERSION } from './protocol-version.ts';
import { encodeFrame, FrameDecoder, messageChunks } from './raft-frames.ts';

export const HELLO_PROTOCOL = '/styx/hello/1.0.0';

/** Bound on a hello, bytes: a version and a few dozen flag names. */
export const MAX_HELLO_BYTES = 16 * 1024;

/** How long one exchange may take, ms. */
const HELLO_TIMEOUT_MS = 5_000;
/** Attempts per new connection (a stream opened while the connection is still set up may be reset). */
const HELLO_ATTEMPTS = 3;
const HELLO_RETRY_MS = 200;

/** A hello that does not follow the layout above. */
export class HelloMalformedError extends ClusterError {
  constructor(detail: string) {
    super('HELLO_MALFORMED', `malformed hello: ${detail}`);
  }
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeHello(build: NodeBuild): Uint8Array {
  return encoder.encode(JSON.stringify({ version: build.version, flags: [...build.flags] }));
}

/** Throws `HelloMalformedError`. Unknown fields are ignored (a later version may add some). */
export function decodeHello(bytes: Uint8Array): NodeBuild {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(bytes));
  } catch {
    throw new HelloMalformedError('not JSON');
  }
  const { version, flags } = (value ?? {}) as { version?: unknown; flags?: unknown };
  if (!Number.isSafeInteger(version) || (version as number) < 1) throw new HelloMalformedError('bad version');
  if (!Array.isArray(flags) || !flags.every((f) => typeof f === 'string' && f !== '')) {
    throw new HelloMalformedError('flags is not a list of names');
  }
  return { version: version as number, flags: new Set(flags as string[]) };
}

const LEGACY_BUILD: NodeBuild = { version: LEGACY_PROTOCOL_VERSION, flags: new Set() };

export interface PeerHelloOptions {
  readonly node: Libp2p;
  readonly logger: Logger;
  /** What this node announces. */
  readonly build: NodeBuild;
}

/** Every connected peer's build, as its hello said: the versions book of the cluster protocols. */
export class PeerHello implements PeerVersions {
  readonly build: NodeBuild;
  readonly #node: Libp2p;
  readonly #log: Logger;
  readonly #builds = new Map<string, NodeBuild>();
  readonly #exchanging = new Map<string, Promise<NodeBuild | undefined>>();
  readonly #listeners = new Set<(peer: string, build: NodeBuild | undefined) => void>();
  readonly #closing = new AbortController();
  #closed = false;

  private constructor(options: PeerHelloOptions) {
    this.#node = options.node;
    this.#log = options.logger.child({ component: 'peer-hello' });
    this.build = options.build;
  }

  static async start(options: PeerHelloOptions): Promise<PeerHello> {
    const hello = new PeerHello(options);
    await options.node.handle(HELLO_PROTOCOL, (stream, connection) => hello.#answer(stream, connection), {
      maxInboundStreams: 4,
    });
    options.node.addEventListener('peer:connect', hello.#onConnect);
    options.node.addEventListener('peer:disconnect', hello.#onDisconnect);
    // Peers connected before the hello was up (none in the node's own start order; tests may differ).
    for (const connection of options.node.getConnections())
      void hello.#greet(connection.remotePeer.toString());
    return hello;
  }

  get localVersion(): number {
    return this.build.version;
  }

  versionOf(peer: string): number | undefined {
    return this.#builds.get(peer)?.version;
  }

  /** `peer`'s build as its hello on the current connection said; undefined before it (or offline). */
  of(peer: string): NodeBuild | undefined {
    return this.#builds.get(peer);
  }

  /** Called when a peer's hello arrives or changes, and (undefined) when its last connection closes. */
  onChange(listener: (peer: string, build: NodeBuild | undefined) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Say hello again to those of `peers` connected without a known build (a hello lost to a stream
   * reset), waiting at most `timeoutMs` for them.
   */
  async refresh(peers: Iterable<string>, timeoutMs = HELLO_TIMEOUT_MS): Promise<void> {
    const pending = [...peers].filter((p) => !this.#builds.has(p)).map((p) => this.#exchange(p));
    if (pending.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.allSettled(pending), timeout]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort();
    this.#node.removeEventListener('peer:connect', this.#onConnect);
    this.#node.removeEventListener('peer:disconnect', this.#onDisconnect);
    await this.#node.unhandle(HELLO_PROTOCOL).catch(() => undefined);
  }

  readonly #onConnect = (event: CustomEvent<PeerId>): void => {
    void this.#greet(event.detail.toString());
  };

  readonly #onDisconnect = (event: CustomEvent<PeerId>): void => {
    const peer = event.detail.toString();
    if (this.#builds.delete(peer)) this.#changed(peer, undefined);
  };

  /** A new connection: hello, tried again a few times while the connection is still being set up. */
  async #greet(peer: string): Promise<void> {
    for (let attempt = 1; attempt <= HELLO_ATTEMPTS && !this.#closed; attempt++) {
      if ((await this.#exchange(peer)) !== undefined || this.#connection(peer) === undefined) return;
      await new Promise((resolve) => setTimeout(resolve, HELLO_RETRY_MS * attempt));
    }
  }

  #exchange(peer: string): Promise<NodeBuild | undefined> {
    let exchanging = this.#exchanging.get(peer);
    if (exchanging === undefined) {
      exchanging = this.#ask(peer).finally(() => this.#exchanging.delete(peer));
      this.#exchanging.set(peer, exchanging);
    }
    return exchanging;
  }

  /** Open a hello stream on the connection to `peer`: its build, or undefined when that failed. */
  async #ask(peer: string): Promise<NodeBuild | undefined> {
    const connection = this.#connection(peer);
    if (connection === undefined || this.#closed) return undefined;
    const signal = AbortSignal.any([AbortSignal.timeout(HELLO_TIMEOUT_MS), this.#closing.signal]);
    let stream: Stream;
    try {
      stream = await connection.newStream(HELLO_PROTOCOL, { signal });
    } catch (error) {
      if ((error as Error).name === 'UnsupportedProtocolError') {
        // A build from before the hello: it speaks the version-1 protocols and no flag.
        this.#record(peer, LEGACY_BUILD);
        return LEGACY_BUILD;
      }
      this.#log.debug({ peer, err: error }, 'cannot open a hello stream');
      return undefined;
    }
    try {
      stream.send(encodeFrame(encodeHello(this.build)));
      const build = decodeHello(await readOneFrame(stream, signal));
      await stream.close({ signal }).catch(() => undefined);
      this.#record(peer, build);
      return build;
    } catch (error) {
      this.#log.debug({ peer, err: error }, 'hello exchange failed');
      stream.abort(error instanceof Error ? error : new Error(String(error)));
      return undefined;
    }
  }

  /** A peer's hello stream: record its build, answer with this node's, close. */
  #answer(stream: Stream, connection: Connection): void {
    const peer = connection.remotePeer.toString();
    const signal = AbortSignal.any([AbortSignal.timeout(HELLO_TIMEOUT_MS), this.#closing.signal]);
    readOneFrame(stream, signal)
      .then(async (frame) => {
        const build = decodeHello(frame);
        stream.send(encodeFrame(encodeHello(this.build)));
        await stream.close({ signal });
        this.#record(peer, build);
      })
      .catch((error: unknown) => {
        this.#log.warn({ peer, err: error }, 'bad hello from a peer: closing its hello stream');
        stream.abort(error instanceof Error ? error : new Error(String(error)));
      });
  }

  #connection(peer: string): Connection | undefined {
    return this.#node.getConnections().find((c) => c.remotePeer.toString() === peer && c.status === 'open');
  }

  #record(peer: string, build: NodeBuild): void {
    if (this.#closed) return;
    const before = this.#builds.get(peer);
    if (before !== undefined && sameBuild(before, build)) return;
    this.#builds.set(peer, build);
    const fields = {
      peer,
      version: build.version,
      flags: [...build.flags],
      localVersion: this.build.version,
    };
    if (build.version !== this.build.version) {
      this.#log.warn(fields, 'a peer runs another cluster protocol version (a rolling upgrade?)');
    } else {
      this.#log.info(fields, 'peer hello');
    }
    this.#changed(peer, build);
  }

  #changed(peer: string, build: NodeBuild | undefined): void {
    for (const listener of this.#listeners) {
      try {
        listener(peer, build);
      } catch (error) {
        this.#log.error({ peer, err: error }, 'hello listener failed');
      }
    }
  }
}

function sameBuild(a: NodeBuild, b: NodeBuild): boolean {
  return (
    a.version === b.version && a.flags.size === b.flags.size && [...a.flags].every((f) => b.flags.has(f))
  );
}

/** The first frame `stream` carries (at most `MAX_HELLO_BYTES`); rejects when it ends first or `signal` aborts. */
function readOneFrame(stream: Stream, signal: AbortSignal): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const frames = new FrameDecoder(MAX_HELLO_BYTES);
    const settle = (outcome: Uint8Array | Error): void => {
      stream.removeEventListener('message', onMessage);
      stream.removeEventListener('remoteCloseWrite', onEnd);
      stream.removeEventListener('close', onEnd);
      signal.removeEventListener('abort', onAbort);
      if (outcome instanceof Uint8Array) resolve(outcome);
      else reject(outcome);
    };
    const onMessage = (event: StreamMessageEvent): void => {
      try {
        for (const chunk of messageChunks(event.data)) {
          const [frame] = frames.push(chunk);
          if (frame !== undefined) {
            settle(frame);
            return;
          }
        }
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error)));
      }
    };
    const onEnd = (): void => settle(new HelloMalformedError('the stream ended before a whole hello'));
    const onAbort = (): void => settle(new Error('no hello in time'));
    if (signal.aborted) {
      onAbort();
      return;
    }
    stream.addEventListener('message', onMessage);
    stream.addEventListener('remoteCloseWrite', onEnd);
    stream.addEventListener('close', onEnd);
    signal.addEventListener('abort', onAbort);
  });
}
