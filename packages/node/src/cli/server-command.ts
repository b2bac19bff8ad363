import { mkdir } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { resolve } from 'node:path';
import { Broker } from '../broker/broker.ts';
import { acquireDataDir } from '../broker/data-dir.ts';
import {
  DEFAULT_DISK_FREE_LIMIT_BYTES,
  DiskFreeLimitError,
  diskFreeLimitBytes,
  parseDiskFreeLimit,
} from '../broker/disk-free-limit.ts';
import { IdleHeapReclaimer } from '../broker/idle-heap-reclaim.ts';
import { Cluster } from '../cluster/cluster.ts';
import { loadClusterSecret } from '../cluster/cluster-secret.ts';
import { singleNodeClusterView } from '../cluster/cluster-view.ts';
import { DnsDiscovery } from '../cluster/dns-discovery.ts';
import { ClusterError } from '../cluster/errors.ts';
import { DEFAULT_MAX_FRAME_BYTES } from '../cluster/libp2p-transport.ts';
import { loadNodeIdentity } from '../cluster/node-identity.ts';
import type { LogLevel } from '../logging/logger.ts';
import { createLogger, LOG_LEVELS } from '../logging/logger.ts';
import {
  DEFAULT_MANAGEMENT_PORT,
  ManagementListenError,
  ManagementServer,
} from '../management/management-server.ts';
import { DEFAULT_MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE_LIMIT } from '../session/message-size.ts';
import { openNodeStorage } from '../storage/node-storage.ts';
import { PRETEND_OLDER_ENV } from '../test-support/pretend-older.ts';
import { TEST_BREAK_ENV, TEST_BREAKS, testBreaks } from '../test-support/test-breaks.ts';
import { AmqpServer } from '../transport/amqp091/server.ts';
import type { TlsFiles } from '../transport/tls/tls-context.ts';
import { TlsContext } from '../transport/tls/tls-context.ts';
import { ListenError, WsServer } from '../transport/ws/server.ts';
import { parse, parseIntegerFlag, UsageError, withoutLeadingSeparator } from './args.ts';
import type { ClusterOptions } from './cluster-flags.ts';
import { CLUSTER_FLAGS_USAGE, clusterSecretSource, parseClusterFlags } from './cluster-flags.ts';
import { removeRunningNode, writeRunningNode } from './running-node-file.ts';
import type { ConfigEntry } from './server-config.ts';
import { ConfigFileError, readServerConfig } from './server-config.ts';

export const SERVER_USAGE = `Usage: styx server [options]

Run a Styx broker node, on its own or as a member of a cluster. Clients connect with @styx/client
to ws://HOST:PORT.

Options:
  --config FILE         read these options from FILE, RabbitMQ's key = value lines (styx.conf; see
                        README "Config file"); flags given here override it
  --data-dir DIR        where the node keeps its data (default: ./styx-data)
  --host HOST           address to listen on (default: 127.0.0.1, loopback only)
  --port PORT           WebSocket port for clients (default: 5680; none: no plain listener, TLS only)
  --amqp-port PORT      AMQP 0-9-1 port for RabbitMQ clients (amqplib, pika, the Java client), on
                        --host (default: 5672; 0 turns it off)
  --amqps-port PORT     AMQP 0-9-1 over TLS (amqps) port, with --tls-cert and --tls-key (default
                        then: 5671; 0 turns it off)
  --management-port PORT  HTTP management API port for styx ctl (default: 15680; 0 disables it)
  --management-host HOST  address the management API listens on (default: 127.0.0.1, loopback only)
  --management-hostname NAME  another name the management API answers to (its Host header), e.g.
                        a DNS name or a proxy's; repeatable or comma separated. Requests naming
                        any other host are refused (421); its own addresses are always accepted
  --tls-cert FILE       the node's TLS certificate (PEM; may hold its chain), for the TLS listeners
  --tls-key FILE        its private key (PEM, without a passphrase)
  --tls-ca FILE         CA certificate(s) (PEM) signing client certificates: wss (and amqps)
                        clients must then present one it signed. Files are reloaded when they
                        change (or on SIGHUP): new connections get the new certificate
  --tls-port PORT       WebSocket-over-TLS (wss) port for clients, e.g. 5681, besides --port
  --management-tls-port PORT  https port for the management API and console, e.g. 15681,
                        besides --management-port (0 there: https only)
  --metrics-auth        /metrics asks for basic auth of a monitoring or administrator user
                        (default: off, as RabbitMQ's Prometheus endpoint)
  --metrics-cache-seconds S  how long a /metrics render is served again (default: 5; 0 = per scrape)
  --log-level LEVEL     fatal | error | warn | info | debug | trace | silent (default: info)
  --log-format FORMAT   pretty | json (default: pretty on a terminal, json otherwise)
  --memory-budget MIB   resident memory above which publishers are throttled (default: 40% of RAM)
  --disk-free-limit LIMIT  free space on the data dir's filesystem below which publishers are
                        blocked, cluster-wide: bytes with a unit (50MB, 2GB, 1GiB) or
                        mem_relative:FACTOR of the machine's memory (default: 50MB)
  --frame-max BYTES     largest WebSocket message in either direction (default: 8388608)
  --max-message-size BYTES  largest message body a client may publish; larger ones are refused
                        with 406 PRECONDITION_FAILED (default: 16777216, at most 536870912)
  --heartbeat SECONDS   heartbeat interval proposed to clients, 0 = off (default: 60)
  -h, --help            show this help

${CLUSTER_FLAGS_USAGE}

Testing only: ${TEST_BREAK_ENV}=NAME[,NAME] starts a deliberately broken node, so the chaos
suite (test/chaos) can show its checkers catch each bug; never set it otherwise. Names:
${TEST_BREAKS.slice(0, 3).join(', ')},
${TEST_BREAKS.slice(3).join(', ')}.
Testing only: ${PRETEND_OLDER_ENV}=1 makes a clustered node pretend to run the previous cluster
protocol version (it lacks the newest feature flags), to test rolling upgrades.

Stops cleanly on SIGINT or SIGTERM.`;

/** What `styx server` runs with, from its flags. */
export interface ServerOptions {
  readonly dataDir: string;
  readonly host: string;
  /** The plain (ws) client port; undefined: `--port none`, TLS only. */
  readonly port: number | undefined;
  /** The AMQP 0-9-1 port; undefined: `--amqp-port 0`, no AMQP listener. */
  readonly amqpPort: number | undefined;
  readonly managementHost: string;
  /** 0: no management API. */
  readonly managementPort: number;
  /** Names the management API answers to besides its own addresses (`--management-hostname`). */
  readonly managementHostnames: readonly string[];
  /** Whether /metrics asks for basic auth (`--metrics-auth`). */
  readonly metricsAuth: boolean;
  /** How long a /metrics render is served again, ms. */
  readonly metricsCacheMs: number;
  readonly logLevel: LogLevel;
  /** Undefined: pretty on a terminal, json otherwise. */
  readonly logFormat: 'pretty' | 'json' | undefined;
  /** Resident memory above which publishers are throttled, MiB; 0 disables the check. */
  readonly memoryBudgetMib: number;
  /** Free bytes on the data dir's filesystem below which publishers are blocked (`--disk-free-limit`). */
  readonly diskFreeLimitBytes: number;
  /** Largest WebSocket message, bytes. */
  readonly frameMax: number;
  /** Largest message body a client may publish, bytes (`--max-message-size`). */
  readonly maxMessageSize: number;
  /** Heartbeat interval proposed to clients, seconds; 0 = off. */
  readonly heartbeatS: number;
  /** Clustering (`--cluster-listen` and the flags that need it); undefined: the node runs alone. */
  readonly cluster: ClusterOptions | undefined;
  /** The TLS listeners and their certificate (`--tls-*`); undefined: no TLS. */
  readonly tls: ServerTlsOptions | undefined;
}

/** `--tls-cert`, `--tls-key`, `--tls-ca` and the TLS ports (at least one is given). */
export interface ServerTlsOptions {
  readonly files: TlsFiles;
  /** The wss client port (0: any free one); undefined: no wss listener. */
  readonly port: number | undefined;
  /** The https management port (0: any free one); undefined: no https listener. */
  readonly managementPort: number | undefined;
  /** The amqps port; undefined: `--amqps-port 0`, no amqps listener. */
  readonly amqpsPort: number | undefined;
}

/**
 * The largest max_message_size a clustered node takes: an enqueue crosses nodes (forwarded, then
 * replicated) in one frame of at most the cluster transport's bound, with its command, properties
 * and the rest of its batch beside the body; 16 MiB of that bound is left for them.
 */
const CLUSTER_MESSAGE_SIZE_LIMIT = DEFAULT_MAX_FRAME_BYTES - 16 * 1024 * 1024;

/** `styx server`'s flags, for parseArgs; each but --help and --config has a key in CONFIG_KEYS. */
export const SERVER_FLAGS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'amqp-port': { type: 'string' },
  'amqps-port': { type: 'string' },
  'management-port': { type: 'string' },
  'management-host': { type: 'string' },
  'management-hostname': { type: 'string', multiple: true },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-port': { type: 'string' },
  'management-tls-port': { type: 'string' },
  'metrics-auth': { type: 'boolean' },
  'metrics-cache-seconds': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'memory-budget': { type: 'string' },
  'disk-free-limit': { type: 'string' },
  'frame-max': { type: 'string' },
  'max-message-size': { type: 'string' },
  heartbeat: { type: 'string' },
  'cluster-listen': { type: 'string' },
  join: { type: 'string', multiple: true },
  'discover-dns': { type: 'string' },
  'discover-dns-port': { type: 'string' },
  'discover-dns-server': { type: 'string', multiple: true },
  'node-name': { type: 'string' },
  'cluster-secret-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ServerFlag = keyof typeof SERVER_FLAGS;

/** The flags that may be given several times (their config keys may repeat). */
export function repeatableServerFlags(): ReadonlySet<string> {
  return new Set(
    Object.entries(SERVER_FLAGS)
      .filter(([, spec]) => 'multiple' in spec && spec.multiple)
      .map(([flag]) => flag),
  );
}

/** `styx server`'s flags as ServerOptions, or 'help' for --help. Throws UsageError. */
export function parseServerOptions(
  argv: readonly string[],
  totalMemoryBytes = totalmem(),
): ServerOptions | 'help' {
  const { values } = parse(argv, SERVER_FLAGS);
  if (values.help) return 'help';
  const level = (values['log-level'] ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(level))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got '${level}'`);
  const format = values['log-format'];
  if (format !== undefined && format !== 'pretty' && format !== 'json')
    throw new UsageError(`--log-format must be pretty or json, got '${format}'`);
  // `none`: RabbitMQ's `listeners.tcp = none`, for a node that serves clients over TLS only.
  const port = values.port === 'none' ? undefined : parseIntegerFlag('port', values.port, 5680, 0, 65535);
  const host = values.host ?? '127.0.0.1';
  // RabbitMQ's port; 0 turns the listener off (a node that serves only the WebSocket protocol).
  const amqpPort = parseIntegerFlag('amqp-port', values['amqp-port'], 5672, 0, 65535) || undefined;
  const managementPort = parseIntegerFlag(
    'management-port',
    values['management-port'],
    DEFAULT_MANAGEMENT_PORT,
    0,
    65535,
  );
  const managementHost = values['management-host'] ?? '127.0.0.1';
  const managementHostnames = (values['management-hostname'] ?? [])
    .flatMap((list) => list.split(','))
    .map((name) => name.trim());
  for (const name of managementHostnames) {
    if (!/^(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+)$/.test(name)) {
      throw new UsageError(`--management-hostname takes host names without a port, got '${name}'`);
    }
  }
  const metricsCacheS = parseIntegerFlag('metrics-cache-seconds', values['metrics-cache-seconds'], 5, 0, 300);
  const totalMib = Math.floor(totalMemoryBytes / 1024 / 1024);
  const memoryBudgetMib = parseIntegerFlag(
    'memory-budget',
    values['memory-budget'],
    Math.floor(totalMib * 0.4),
    0,
    16 * 1024 * 1024,
  );
  const diskFreeLimitBytes = parseDiskFreeLimitFlag(values['disk-free-limit'], totalMemoryBytes);
  const frameMax = parseIntegerFlag(
    'frame-max',
    values['frame-max'],
    8 * 1024 * 1024,
    4096,
    256 * 1024 * 1024,
  );
  const maxMessageSize = parseIntegerFlag(
    'max-message-size',
    values['max-message-size'],
    DEFAULT_MAX_MESSAGE_SIZE,
    1,
    MAX_MESSAGE_SIZE_LIMIT,
  );
  const heartbeatS = parseIntegerFlag('heartbeat', values.heartbeat, 60, 0, 3600);
  const cluster = parseClusterFlags(values);
  if (cluster !== undefined && maxMessageSize > CLUSTER_MESSAGE_SIZE_LIMIT) {
    throw new UsageError(
      `--max-message-size above ${CLUSTER_MESSAGE_SIZE_LIMIT} is not supported in a cluster (a message crosses ` +
        `nodes in one frame of at most ${DEFAULT_MAX_FRAME_BYTES} bytes), got ${maxMessageSize}`,
    );
  }
  return {
    dataDir: resolve(values['data-dir'] ?? 'styx-data'),
    host,
    port,
    amqpPort,
    managementHost,
    managementPort,
    managementHostnames,
    metricsAuth: values['metrics-auth'] === true,
    metricsCacheMs: metricsCacheS * 1000,
    logLevel: level,
    logFormat: format,
    memoryBudgetMib,
    diskFreeLimitBytes,
    frameMax,
    maxMessageSize,
    heartbeatS,
    cluster,
    tls: parseTlsFlags(values, port),
  };
}

/**
 * The TLS flags. As RabbitMQ's `listeners.ssl` and `management.ssl`, a TLS listener is one more
 * listener on its own port, opened only when its port is given, and the plain ones stay unless
 * turned off (`--port none`, `--management-port 0`): clients move over at their own pace, and no
 * port opens that the operator did not name. Throws UsageError.
 */
function parseTlsFlags(
  values: Partial<
    Record<'tls-cert' | 'tls-key' | 'tls-ca' | 'tls-port' | 'management-tls-port' | 'amqps-port', string>
  >,
  plainPort: number | undefined,
): ServerTlsOptions | undefined {
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  const caFile = values['tls-ca'];
  const tlsPort =
    values['tls-port'] === undefined
      ? undefined
      : parseIntegerFlag('tls-port', values['tls-port'], 0, 0, 65535);
  const managementTlsPort =
    values['management-tls-port'] === undefined
      ? undefined
      : parseIntegerFlag('management-tls-port', values['management-tls-port'], 0, 0, 65535);
  if (plainPort === undefined && tlsPort === undefined) {
    throw new UsageError('--port none leaves clients no listener: give --tls-port for wss');
  }
  // As RabbitMQ's listeners.ssl.default: amqps on 5671 once the node has a certificate.
  const amqpsPort = parseIntegerFlag('amqps-port', values['amqps-port'], 5671, 0, 65535) || undefined;
  if (certFile === undefined && keyFile === undefined) {
    if (values['amqps-port'] !== undefined && amqpsPort !== undefined) {
      throw new UsageError('--amqps-port needs --tls-cert and --tls-key');
    }
    if (caFile !== undefined) throw new UsageError('--tls-ca needs --tls-cert and --tls-key');
    if (tlsPort !== undefined) throw new UsageError('--tls-port needs --tls-cert and --tls-key');
    if (managementTlsPort !== undefined) {
      throw new UsageError('--management-tls-port needs --tls-cert and --tls-key');
    }
    return undefined;
  }
  if (certFile === undefined)
    throw new UsageError('--tls-key needs --tls-cert (the certificate of that key)');
  if (keyFile === undefined) throw new UsageError('--tls-cert needs --tls-key (the key of that certificate)');
  if (tlsPort === undefined && managementTlsPort === undefined && amqpsPort === undefined) {
    throw new UsageError(
      '--tls-cert: no TLS listener named: give --tls-port (wss, e.g. 5681), --management-tls-port (https, e.g. 15681) and/or --amqps-port (amqps, e.g. 5671)',
    );
  }
  return {
    files: {
      certFile: resolve(certFile),
      keyFile: resolve(keyFile),
      caFile: caFile === undefined ? undefined : resolve(caFile),
    },
    port: tlsPort,
    managementPort: managementTlsPort,
    amqpsPort,
  };
}

/** `--disk-free-limit` in bytes (default: RabbitMQ's 50 MB). Throws UsageError. */
function parseDiskFreeLimitFlag(value: string | undefined, totalMemoryBytes: number): number {
  if (value === undefined) return DEFAULT_DISK_FREE_LIMIT_BYTES;
  try {
    return diskFreeLimitBytes(parseDiskFreeLimit(value), totalMemoryBytes);
  } catch (err) {
    if (err instanceof DiskFreeLimitError) throw new UsageError(`--disk-free-limit: ${err.message}`);
    throw err;
  }
}

/**
 * `styx server`'s flags with `--config FILE`'s keys under them: each key becomes its flag, placed
 * before the command line's, so a flag given there wins (a repeatable flag given there replaces all
 * of the file's values). The whole is checked by parseServerOptions; a refusal about a flag that
 * came from the file is reported as the file's: the file, the line, the key, the value and its form.
 * Throws UsageError or ConfigFileError.
 */
export async function serverOptionsWithConfig(
  argv: readonly string[],
  totalMemoryBytes = totalmem(),
): Promise<ServerOptions | 'help'> {
  const { values } = parse(argv, SERVER_FLAGS);
  if (values.help === true || values.config === undefined) return parseServerOptions(argv, totalMemoryBytes);
  const config = await readServerConfig(resolve(values.config), repeatableServerFlags());
  const fromFile: string[] = [];
  const origin = new Map<string, ConfigEntry[]>();
  for (const entry of config.entries) {
    const flag = entry.flag as ServerFlag;
    if (values[flag] !== undefined) continue;
    if (SERVER_FLAGS[flag].type === 'boolean') {
      if (entry.value !== 'true' && entry.value !== 'false') {
        throw new ConfigFileError(
          `${config.file}:${entry.line}: ${entry.key} = ${entry.value}: expected true or false`,
        );
      }
      if (entry.value === 'true') fromFile.push(`--${flag}`);
    } else {
      fromFile.push(`--${flag}`, entry.flagValue);
    }
    origin.set(flag, [...(origin.get(flag) ?? []), entry]);
  }
  try {
    return parseServerOptions([...fromFile, ...withoutLeadingSeparator(argv)], totalMemoryBytes);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // The flag parsers' messages start with the flag: `--port must be ...`, `--join: ...`.
    const said = /^--([a-z0-9-]+):? ([\s\S]*)$/.exec(err.message);
    const entries = said === null ? undefined : origin.get(said[1] as string);
    if (said === null || entries === undefined) throw err;
    const entry = entries.find((e) => err.message.includes(`'${e.value}'`)) ?? (entries[0] as ConfigEntry);
    throw new ConfigFileError(
      `${config.file}:${entry.line}: ${entry.key} = ${entry.value}: ${said[2]} (expected ${entry.form})`,
    );
  }
}

export async function serverCommand(argv: string[]): Promise<number> {
  const options = await serverOptionsWithConfig(argv);
  if (options === 'help') {
    process.stdout.write(`${SERVER_USAGE}\n`);
    return 0;
  }
  const { dataDir, host, port, managementHost, managementPort, memoryBudgetMib, frameMax, heartbeatS } =
    options;
  const format = options.logFormat;
  const logger = createLogger({
    level: options.logLevel,
    ...(format !== undefined ? { pretty: format === 'pretty' } : {}),
  });
  if (testBreaks.unknown.length > 0) {
    process.stderr.write(
      `styx server: ${TEST_BREAK_ENV} names no such break: ${testBreaks.unknown.join(', ')} (known: ${TEST_BREAKS.join(', ')})\n`,
    );
    return 2;
  }
  if (testBreaks.breaks.size > 0) {
    logger.warn(
      { breaks: [...testBreaks.breaks] },
      `${TEST_BREAK_ENV} is set: this node is deliberately broken, for testing the chaos suite's checkers only`,
    );
  }
  // Before anything else starts: bad TLS files are a TlsConfigError (exit 2), with nothing to undo.
  const tls = options.tls === undefined ? undefined : await TlsContext.load(options.tls.files, logger);
  await mkdir(dataDir, { recursive: true });
  const dir = await acquireDataDir(dataDir);
  // The node's identity: its libp2p key, whose peer id is the node id of a new data dir (so any
  // data dir can later form or join a cluster).
  const identity = await loadNodeIdentity(dataDir);
  const storage = await openNodeStorage(dataDir, logger.child({ component: 'storage' }), {
    nodeId: identity.nodeId,
  });
  const nodeName = options.cluster?.nodeName ?? dir.nodeName;
  /** Stop what started so far and exit 1 with `message` (a refusal the operator must act on). */
  const refuse = async (message: string, cluster?: Cluster): Promise<number> => {
    await cluster?.stop().catch(() => undefined);
    await storage.close();
    await dir.release();
    logger.fatal(message);
    logger.flush();
    process.stderr.write(`styx server: ${message}\n`);
    return 1;
  };
  let cluster: Cluster | undefined;
  let broker: Broker;
  try {
    if (options.cluster !== undefined) {
      const secret = await clusterSecretSource(options.cluster, dataDir, logger);
      cluster = await Cluster.start({
        storage,
        identity,
        swarmKey: await loadClusterSecret(secret),
        listen: options.cluster.listen,
        join: options.cluster.join,
        ...(options.cluster.discovery !== undefined
          ? { discovery: new DnsDiscovery(options.cluster.discovery) }
          : {}),
        nodeName,
        logger,
      });
      logger.info(
        { node: nodeName, id: cluster.nodeId, clusterAddress: cluster.address, join: options.cluster.join },
        `cluster layer listening on ${cluster.address}`,
      );
    }
    broker = await Broker.start({
      nodeName,
      logger,
      memoryBudgetBytes: memoryBudgetMib * 1024 * 1024,
      diskFreeLimitBytes: options.diskFreeLimitBytes,
      maxMessageSize: options.maxMessageSize,
      storage,
      ...(cluster !== undefined ? { cluster } : {}),
    });
  } catch (err) {
    if (err instanceof ClusterError) return refuse(err.message, cluster);
    throw err;
  }
  const limits = { frameMax, heartbeatMs: heartbeatS * 1000 };
  // The plain (ws) and the TLS (wss) client listeners; either may be off, not both.
  const clientListeners: Array<{ server: WsServer; scheme: 'ws' | 'wss' }> = [];
  if (port !== undefined)
    clientListeners.push({ server: new WsServer(broker, { host, port, limits }, logger), scheme: 'ws' });
  if (options.tls?.port !== undefined) {
    clientListeners.push({
      server: new WsServer(broker, { host, port: options.tls.port, limits, tls }, logger),
      scheme: 'wss',
    });
  }
  // AMQP 0-9-1 (amqp, and amqps with a certificate) on the client host, as the WebSocket listeners.
  const amqpListeners: Array<{ server: AmqpServer; scheme: 'amqp' | 'amqps' }> = [];
  const amqpLimits = { heartbeatS };
  if (options.amqpPort !== undefined) {
    amqpListeners.push({
      server: new AmqpServer(broker, { host, port: options.amqpPort, limits: amqpLimits }, logger),
      scheme: 'amqp',
    });
  }
  if (options.tls?.amqpsPort !== undefined) {
    amqpListeners.push({
      server: new AmqpServer(broker, { host, port: options.tls.amqpsPort, limits: amqpLimits, tls }, logger),
      scheme: 'amqps',
    });
  }
  const amqpUrls: string[] = [];
  // --management-port 0 disables the plain management API (RabbitMQ's plugin off); the https one
  // is there when --management-tls-port is given.
  const managementPorts: Array<readonly [number, TlsContext | undefined]> = [];
  if (managementPort !== 0) managementPorts.push([managementPort, undefined]);
  if (options.tls?.managementPort !== undefined) managementPorts.push([options.tls.managementPort, tls]);
  const managementListeners: Array<{ server: ManagementServer; port: number }> = [];
  for (const [listenPort, listenTls] of managementPorts) {
    managementListeners.push({
      port: listenPort,
      server: new ManagementServer({
        broker,
        logger,
        hostnames: options.managementHostnames,
        metricsAuth: options.metricsAuth,
        metricsCacheMs: options.metricsCacheMs,
        cluster:
          cluster?.view() ?? singleNodeClusterView({ nodeName: broker.nodeName, nodeId: storage.nodeId }),
        tls: listenTls,
      }),
    });
  }
  const clientUrls: Array<{ url: string; scheme: 'ws' | 'wss' }> = [];
  try {
    for (const { server, scheme } of clientListeners) {
      const address = await server.listen();
      const at = address.address.includes(':') ? `[${address.address}]` : address.address;
      clientUrls.push({ url: `${scheme}://${at}:${address.port}`, scheme });
      // For the listener health checks (`/api/health/checks/port-listener/...`), with the API's own.
      broker.listeners.add({
        protocol: scheme === 'ws' ? 'styx' : 'styx/ssl',
        host: address.address,
        port: address.port,
      });
    }
    for (const { server, scheme } of amqpListeners) {
      const address = await server.listen();
      const at = address.address.includes(':') ? `[${address.address}]` : address.address;
      amqpUrls.push(`${scheme}://${at}:${address.port}`);
      broker.listeners.add({
        protocol: scheme === 'amqp' ? 'amqp' : 'amqp/ssl',
        host: address.address,
        port: address.port,
      });
    }
    for (const { server, port: listenPort } of managementListeners)
      await server.start(managementHost, listenPort);
  } catch (err) {
    await broker.shutdown();
    for (const { server } of managementListeners) await server.close();
    for (const { server } of clientListeners) await server.close();
    for (const { server } of amqpListeners) await server.close();
    await cluster?.stop();
    await storage.close();
    await dir.release();
    if (err instanceof ListenError || err instanceof ManagementListenError) {
      logger.fatal(err.message);
      logger.flush();
      process.stderr.write(`styx server: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  if (cluster !== undefined) {
    const at = cluster.address.lastIndexOf(':');
    broker.listeners.add({
      protocol: 'clustering',
      host: cluster.address.slice(0, at),
      port: Number(cluster.address.slice(at + 1)),
    });
  }
  const managementUrls = managementListeners.map(({ server }) => server.url as string);
  const managementUrl = managementUrls.find((u) => u.startsWith('http:'));
  const managementTlsUrl = managementUrls.find((u) => u.startsWith('https:'));
  if (managementUrl !== undefined)
    logger.info({ managementUrl }, `management API listening on ${managementUrl}`);
  if (managementTlsUrl !== undefined) {
    logger.info({ managementTlsUrl }, `management API listening on ${managementTlsUrl}`);
  }
  const plainUrl = clientUrls.find((u) => u.scheme === 'ws')?.url;
  const tlsUrl = clientUrls.find((u) => u.scheme === 'wss')?.url;
  // The plain URL when there is one (no CA needed to use it), else the TLS one.
  const url = (plainUrl ?? tlsUrl) as string;
  // Rotation without a restart: the files are watched, and SIGHUP reloads them at once.
  await tls?.watch();
  if (tls !== undefined) process.on('SIGHUP', () => void tls.reload('SIGHUP'));
  // For `styx ctl` on this machine: which management API serves this data dir (removed on a clean stop).
  await writeRunningNode(dataDir, {
    pid: process.pid,
    node: nodeName,
    url,
    tls_url: tlsUrl ?? null,
    management_url: managementUrl ?? managementTlsUrl ?? null,
    management_tls_url: managementTlsUrl ?? null,
    cluster_address: cluster?.address ?? null,
  });
  // A drained node gives its heap back once quiet (see idle-heap-reclaim.ts).
  const heapReclaimer = new IdleHeapReclaimer(logger);
  heapReclaimer.start();

  return new Promise<number>((done) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        logger.warn(`${signal} again: exiting now`);
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      heapReclaimer.stop();
      (async () => {
        await removeRunningNode(dataDir);
        for (const { server } of managementListeners) await server.close();
        await broker.shutdown();
        for (const { server } of clientListeners) await server.close();
        for (const { server } of amqpListeners) await server.close();
        tls?.close();
        await cluster?.stop();
        await storage.close();
        await dir.release();
        logger.info('stopped');
        logger.flush();
        done(0);
      })().catch((err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        logger.flush();
        done(1);
      });
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    // Announced only once the handlers are in place: a supervisor (or a test) may signal the node as
    // soon as it reads this line, and before them a signal would kill it without a clean stop.
    const amqpUrl = amqpUrls.find((u) => u.startsWith('amqp:'));
    const amqpsUrl = amqpUrls.find((u) => u.startsWith('amqps:'));
    logger.info(
      {
        url,
        ...(tlsUrl !== undefined && tlsUrl !== url ? { tlsUrl } : {}),
        ...(amqpUrl !== undefined ? { amqpUrl } : {}),
        ...(amqpsUrl !== undefined ? { amqpsUrl } : {}),
        dataDir,
        node: nodeName,
      },
      `Styx listening on ${[plainUrl, tlsUrl, ...amqpUrls].filter((u) => u !== undefined).join(' and ')}`,
    );
  });
}
