/**
 * `styx server`'s clustering flags: `--cluster-listen HOST:PORT` turns clustering on; `--join
 * HOST:PORT` (repeatable), `--discover-dns NAME` (with `--discover-dns-port` and
 * `--discover-dns-server`), `--node-name NAME` and `--cluster-secret-file PATH` need it. Parsed and
 * checked here into `ClusterOptions`; the cluster secret's source is settled at start
 * (`clusterSecretSource`), once the data dir is known.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { ClusterSecretSource } from '../cluster/cluster-secret.ts';
import { CLUSTER_SECRET_ENV } from '../cluster/cluster-secret.ts';
import { clusterAddressProblem } from '../cluster/cluster-view.ts';
import type { DnsDiscoveryOptions } from '../cluster/dns-discovery.ts';
import type { Logger } from '../logging/logger.ts';
import { fitsShortString } from '../metadata/names.ts';
import { parseIntegerFlag, UsageError } from './args.ts';

/** The secret file a clustered node creates in its data dir when given no secret. */
export const CLUSTER_SECRET_FILE = 'cluster-secret';

/** Random bytes in a created secret (hex-encoded: 64 characters). */
const CREATED_SECRET_BYTES = 32;

/** How a node takes part in a cluster, from `styx server`'s flags. */
export interface ClusterOptions {
  /** `--cluster-listen`: where to listen for other nodes, `HOST:PORT` (port 0: any free port). */
  readonly listen: string;
  /** `--join`: members to join through (a fresh data dir) or to announce to (a restart); may be empty. */
  readonly join: readonly string[];
  /** `--discover-dns` and its companions: the nodes listed in DNS; undefined: no DNS discovery. */
  readonly discovery: DnsDiscoveryOptions | undefined;
  /** `--node-name`: the node's name in the cluster; undefined: the name kept in the data dir. */
  readonly nodeName: string | undefined;
  /**
   * `--cluster-secret-file`; undefined: $STYX_CLUSTER_SECRET, else `<data-dir>/cluster-secret`
   * (created on first start). See `clusterSecretSource`.
   */
  readonly secretFile: string | undefined;
}

/** The flags as parseArgs gives them. */
export interface ClusterFlagValues {
  readonly 'cluster-listen'?: string | undefined;
  readonly join?: readonly string[] | undefined;
  readonly 'discover-dns'?: string | undefined;
  readonly 'discover-dns-port'?: string | undefined;
  readonly 'discover-dns-server'?: readonly string[] | undefined;
  readonly 'node-name'?: string | undefined;
  readonly 'cluster-secret-file'?: string | undefined;
}

/** The flags' text for `styx server --help`. */
export const CLUSTER_FLAGS_USAGE = `Clustering (off unless --cluster-listen is given):
  --cluster-listen HOST:PORT  listen for the cluster's other nodes there (e.g. 0.0.0.0:25680);
                        turns clustering on
  --join HOST:PORT      a member's --cluster-listen address: a node with an empty data dir joins
                        that member's cluster, a member announces itself to it; may be repeated
  --discover-dns NAME   find the cluster's nodes in DNS: NAME's SRV records (host and port of each
                        node), or with --discover-dns-port its A/AAAA records. A node with an empty
                        data dir joins the listed nodes' cluster, or forms it when every listed node
                        is fresh and its own address sorts first; looked up again until then (see
                        docs/operations.md, "Peer discovery by DNS")
  --discover-dns-port PORT  the listed nodes' cluster port: read NAME's A/AAAA records, not SRV
  --discover-dns-server IP[:PORT]  a DNS server to ask instead of the system's; repeatable or
                        comma separated
  --node-name NAME      the node's name in the cluster, unique there (default: the name kept in the
                        data dir, styx@<host>-<random>)
  --cluster-secret-file PATH  the cluster's shared secret, the same on every node (default:
                        $${CLUSTER_SECRET_ENV}, else <data-dir>/${CLUSTER_SECRET_FILE}, created on
                        first start: copy it to the other nodes)`;

/** `ClusterOptions` from the flags; undefined without `--cluster-listen`. Throws UsageError. */
export function parseClusterFlags(values: ClusterFlagValues): ClusterOptions | undefined {
  const listen = values['cluster-listen'];
  if (listen === undefined) {
    const needListen = [
      'join',
      'discover-dns',
      'discover-dns-port',
      'discover-dns-server',
      'node-name',
      'cluster-secret-file',
    ] as const;
    for (const flag of needListen) {
      if (values[flag] !== undefined) {
        throw new UsageError(`--${flag} needs --cluster-listen HOST:PORT (clustering is off without it)`);
      }
    }
    return undefined;
  }
  const listenProblem = clusterAddressProblem(listen, true);
  if (listenProblem !== undefined) throw new UsageError(`--cluster-listen: ${listenProblem}`);
  const joins = values.join ?? [];
  for (const address of joins) {
    const problem = clusterAddressProblem(address);
    if (problem !== undefined) throw new UsageError(`--join: ${problem}`);
  }
  const nodeName = values['node-name'];
  if (nodeName !== undefined && (nodeName.trim() === '' || !fitsShortString(nodeName))) {
    throw new UsageError(`--node-name must be 1 to 255 bytes, not blank, got '${nodeName}'`);
  }
  const secretFile = values['cluster-secret-file'];
  if (secretFile === '') throw new UsageError('--cluster-secret-file must name a file');
  const discovery = parseDiscoveryFlags(values);
  return { listen, join: [...new Set(joins)], discovery, nodeName, secretFile };
}

/** A DNS name: dot-separated labels of letters, digits, `-` and `_` (SRV's `_service._tcp`). */
const DNS_NAME =
  /^(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/** `--discover-dns` and its companions; undefined without `--discover-dns`. Throws UsageError. */
function parseDiscoveryFlags(values: ClusterFlagValues): DnsDiscoveryOptions | undefined {
  const name = values['discover-dns'];
  if (name === undefined) {
    for (const flag of ['discover-dns-port', 'discover-dns-server'] as const) {
      if (values[flag] !== undefined) throw new UsageError(`--${flag} needs --discover-dns NAME`);
    }
    return undefined;
  }
  if (!DNS_NAME.test(name)) {
    throw new UsageError(
      `--discover-dns takes a DNS name (e.g. _styx-cluster._tcp.example.com), got '${name}'`,
    );
  }
  const rawPort = values['discover-dns-port'];
  const port =
    rawPort === undefined ? undefined : parseIntegerFlag('discover-dns-port', rawPort, 0, 1, 65535);
  const servers = (values['discover-dns-server'] ?? [])
    .flatMap((list) => list.split(','))
    .map((s) => s.trim());
  for (const server of servers) {
    if (!isDnsServer(server)) {
      throw new UsageError(
        `--discover-dns-server takes an IP address with an optional port (IP:PORT, [IPv6]:PORT), got '${server}'`,
      );
    }
  }
  return { name, port, servers };
}

/** `IP`, `IPv4:PORT` or `[IPv6]:PORT`: what node's resolver accepts as a server. */
function isDnsServer(server: string): boolean {
  if (isIP(server) !== 0) return true;
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(server);
  if (match === null) return false;
  const host = match[1] ?? (match[2] as string);
  const port = Number(match[3]);
  return (match[1] !== undefined ? isIP(host) === 6 : isIP(host) === 4) && port >= 1 && port <= 65535;
}

/**
 * Where the cluster secret comes from: `--cluster-secret-file`, else $STYX_CLUSTER_SECRET, else
 * `<dataDir>/cluster-secret`, which is created (64 random hex digits, mode 0600) when missing and
 * its path logged: the other nodes need a copy. `loadClusterSecret` reads the result.
 */
export async function clusterSecretSource(
  cluster: ClusterOptions,
  dataDir: string,
  logger: Logger,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<ClusterSecretSource> {
  if (cluster.secretFile !== undefined) return { file: cluster.secretFile };
  const fromEnv = env[CLUSTER_SECRET_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return { env };
  const file = join(dataDir, CLUSTER_SECRET_FILE);
  if (await ensureSecretFile(file)) {
    logger.info(
      { secretFile: file },
      `created a cluster secret in ${file}: give every node of the cluster the same secret ` +
        '(--cluster-secret-file or $STYX_CLUSTER_SECRET)',
    );
  }
  return { file };
}

/**
 * Create `file` holding a new random secret (64 hex digits, mode 0600) unless it exists; true when
 * it was created. Never overwrites: a restart, or another process that just made it, keeps its own.
 */
export async function ensureSecretFile(file: string): Promise<boolean> {
  const secret = `${randomBytes(CREATED_SECRET_BYTES).toString('hex')}\n`;
  try {
    await writeFile(file, secret, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  }
}
