// Turns connect()'s arguments (an amqplib-style URL or object, plus socket options) into where to
// open the WebSocket and what to put in Hello.
import { DEFAULT_FRAME_MAX, DEFAULT_PORT } from '../wire/index.ts';
import type { Credentials } from './credentials.ts';
import { credentials as credentialFactories } from './credentials.ts';

/** amqplib's object form of a connect target (Options.Connect), with Styx's protocols added. */
export interface ConnectOptions {
  /** 'ws' | 'wss' | 'styx' | 'styxs' | 'amqp' | 'amqps' (amqp maps to ws, amqps to wss). */
  protocol?: string;
  hostname?: string;
  port?: number;
  username?: string;
  password?: string;
  locale?: string;
  /** Largest WebSocket message, in bytes, this client accepts (and sends). */
  frameMax?: number;
  /** Requested heartbeat interval, in seconds; 0 = the server's default. */
  heartbeat?: number;
  channelMax?: number;
  vhost?: string;
}

/** connect()'s second argument: amqplib's socket options, plus Styx's. */
export interface SocketOptions {
  /** amqplib's credentials object (credentials.plain(u, p)); wins over URL credentials. */
  credentials?: Credentials;
  /** Styx convenience: credentials without the URL. */
  username?: string;
  password?: string;
  /** Extra Hello client properties (merged over the SDK's own, as amqplib does). */
  clientProperties?: Record<string, unknown>;
  /** Milliseconds to wait for the socket to open and the handshake to finish; no limit if unset. */
  timeout?: number;
  /** Requested heartbeat interval in seconds (overrides the URL's). */
  heartbeat?: number;
  /** Largest WebSocket message, in bytes (overrides the URL's). Default 8 MiB. */
  frameMax?: number;
  /**
   * Write high-water mark, in bytes: publish() returns false while the socket's bufferedAmount plus
   * the not-yet-flushed batch exceed it, and channels emit 'drain' once it falls back below.
   * Default 16 MiB (two default-size batches in flight).
   */
  highWaterMark?: number;
  /** Node only: options passed to the `ws` WebSocket constructor (TLS ca/cert/key, headers, agent). */
  wsOptions?: Record<string, unknown>;
  /** Node TLS options amqplib accepts in socket options, passed to `ws` as they are. */
  ca?: unknown;
  cert?: unknown;
  key?: unknown;
  pfx?: unknown;
  passphrase?: unknown;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** Everything needed to open one connection. */
export interface ConnectTarget {
  /** The WebSocket URL: scheme, host and port; the path is always '/'. */
  url: string;
  username: string;
  password: string;
  vhost: string;
  /** Requested heartbeat, in seconds (0 = the server's default). */
  heartbeat: number;
  /** Requested frameMax, in bytes. */
  frameMax: number;
  /** Requested channel limit (0 = the server's). */
  channelMax: number;
  locale: string;
}

/** Default write high-water mark, in bytes (see SocketOptions.highWaterMark). */
export const DEFAULT_HIGH_WATER_MARK = 16 * 1024 * 1024;

const TLS_PROTOCOLS = new Set(['wss', 'styxs', 'amqps', 'https']);
const KNOWN_PROTOCOLS = new Set(['ws', 'wss', 'styx', 'styxs', 'amqp', 'amqps', 'http', 'https']);

function intOr(value: string | number | null | undefined, fallback: number): number {
  if (value === null || value === undefined || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number.parseInt(value, 10);
  if (!Number.isFinite(n) || n < 0)
    throw new TypeError(`expected a non-negative integer, got ${String(value)}`);
  return n;
}

function wsUrl(protocol: string, hostname: string, port: number | undefined): string {
  const scheme = TLS_PROTOCOLS.has(protocol) ? 'wss' : 'ws';
  // WHATWG URL keeps IPv6 brackets in hostname for non-special schemes; add them if missing.
  const host = hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname;
  return `${scheme}://${host}:${port ?? DEFAULT_PORT}/`;
}

function decodeComponent(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Resolves connect()'s arguments. String URLs: `ws://host:port/vhost`, `styx://user:pass@host:port/vhost`
 * (styxs/wss for TLS), and `amqp://`/`amqps://` pasted from RabbitMQ setups (port 5680 when none is
 * given; an explicit port is kept). The vhost is the URL-decoded path without its leading slash
 * ('/' when empty); query parameters heartbeat, frameMax, channelMax and locale are read as amqplib
 * reads them. Credentials default to guest/guest, as in amqplib.
 */
export function resolveTarget(
  url: string | ConnectOptions | undefined,
  socketOptions: SocketOptions = {},
): ConnectTarget {
  let protocol: string;
  let hostname: string;
  let port: number | undefined;
  let username: string;
  let password: string;
  let vhost: string;
  let heartbeat: number;
  let frameMax: number;
  let channelMax: number;
  let locale: string;

  if (url === undefined || typeof url === 'string') {
    const parsed = new URL(url ?? 'amqp://localhost');
    protocol = parsed.protocol.replace(/:$/, '');
    hostname = parsed.hostname || 'localhost';
    port = parsed.port === '' ? undefined : intOr(parsed.port, DEFAULT_PORT);
    // amqplib: guest/guest only when the URL has neither a username nor a password.
    if (parsed.username !== '' || parsed.password !== '') {
      username = decodeComponent(parsed.username);
      password = decodeComponent(parsed.password);
    } else {
      username = 'guest';
      password = 'guest';
    }
    const path = parsed.pathname.startsWith('/') ? parsed.pathname.slice(1) : parsed.pathname;
    vhost = path === '' ? '/' : decodeComponent(path);
    const q = parsed.searchParams;
    heartbeat = intOr(q.get('heartbeat'), 0);
    frameMax = intOr(q.get('frameMax'), DEFAULT_FRAME_MAX);
    channelMax = intOr(q.get('channelMax'), 0);
    locale = q.get('locale') ?? 'en_US';
  } else {
    protocol = (url.protocol ?? 'amqp').replace(/:$/, '');
    hostname = url.hostname ?? 'localhost';
    port = url.port;
    if (url.username === undefined && url.password === undefined) {
      username = 'guest';
      password = 'guest';
    } else {
      username = url.username ?? '';
      password = url.password ?? '';
    }
    vhost = url.vhost === undefined || url.vhost === '' ? '/' : url.vhost;
    heartbeat = intOr(url.heartbeat, 0);
    frameMax = intOr(url.frameMax, DEFAULT_FRAME_MAX);
    channelMax = intOr(url.channelMax, 0);
    locale = url.locale ?? 'en_US';
  }

  if (!KNOWN_PROTOCOLS.has(protocol)) {
    throw new Error(`Expected ws:, wss:, styx:, styxs:, amqp: or amqps: as the protocol; got ${protocol}:`);
  }

  const creds = socketOptions.credentials;
  if (creds !== undefined) {
    username = creds.username ?? '';
    password = creds.password ?? '';
  } else if (socketOptions.username !== undefined || socketOptions.password !== undefined) {
    const plain = credentialFactories.plain(socketOptions.username ?? '', socketOptions.password ?? '');
    username = plain.username ?? '';
    password = plain.password ?? '';
  }
  if (socketOptions.heartbeat !== undefined) heartbeat = intOr(socketOptions.heartbeat, 0);
  if (socketOptions.frameMax !== undefined) frameMax = intOr(socketOptions.frameMax, DEFAULT_FRAME_MAX);
  if (frameMax === 0) frameMax = DEFAULT_FRAME_MAX;

  return {
    url: wsUrl(protocol, hostname, port),
    username,
    password,
    vhost,
    heartbeat,
    frameMax,
    channelMax,
    locale,
  };
}
