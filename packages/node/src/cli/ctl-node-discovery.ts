/**
 * Which node `styx ctl` talks to, the way rabbitmqctl finds its local node: `--node URL`, else
 * $STYX_NODE, else the running-node file (running-node-file.ts) of `--data-dir DIR`, else of the
 * data dir in `--config FILE` (its management.host/port when the node is not running), else of
 * `./styx-data` (styx server's default), else of `./styx-cluster/node-N` (styx local-cluster's).
 * When that is not one certain node (no file, a stale one, several cluster nodes), the choice is
 * said on stderr, so an operator never manages another broker than they think without a word.
 */
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UsageError } from './args.ts';
import type { RunningNode, RunningNodeLookup } from './running-node-file.ts';
import { RUNNING_NODE_FILE, reachableUrl, readRunningNode } from './running-node-file.ts';
import { configValue, readServerConfig } from './server-config.ts';

/** The management API's default address (styx server --management-port, --management-host). */
export const DEFAULT_NODE = 'http://127.0.0.1:15680';

/** Where to look, from `styx ctl`'s flags and environment. */
export interface NodeSources {
  readonly node: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly dataDir: string | undefined;
  readonly config: string | undefined;
  /** The directory relative paths start from. */
  readonly cwd: string;
}

/** The node chosen, and the line to say on stderr when the choice was not certain. */
export interface NodeChoice {
  readonly url: string;
  readonly notice: string | undefined;
}

/** No node could be found where the operator said to look (exit as unreachable). */
export class NodeNotFoundError extends Error {
  readonly code = 'CTL_NODE_NOT_FOUND';
  constructor(message: string) {
    super(message);
    this.name = 'NodeNotFoundError';
  }
}

/** Choose the node (see the module comment). Throws NodeNotFoundError, UsageError, ConfigFileError. */
export async function chooseNode(sources: NodeSources): Promise<NodeChoice> {
  if (sources.node !== undefined) return { url: sources.node, notice: undefined };
  const fromEnv = sources.env.STYX_NODE;
  if (fromEnv !== undefined && fromEnv !== '') return { url: fromEnv, notice: undefined };
  if (sources.dataDir !== undefined) {
    const dir = resolve(sources.cwd, sources.dataDir);
    return fromRunningNode(dir, await readRunningNode(dir), undefined);
  }
  if (sources.config !== undefined) {
    const config = await readServerConfig(resolve(sources.cwd, sources.config), new Set(['join']));
    const dir = resolve(sources.cwd, configValue(config, 'data_dir') ?? 'styx-data');
    const lookup = await readRunningNode(dir);
    if (lookup.state === 'running') return fromRunningNode(dir, lookup, undefined);
    const host = configValue(config, 'management.host') ?? '127.0.0.1';
    const plainPort = configValue(config, 'management.port') ?? '15680';
    const tlsPort = configValue(config, 'management.tls.port');
    // The https listener when the file turns the plain one off (a TLS-only node).
    const [scheme, port, key] =
      plainPort === '0' && tlsPort !== undefined
        ? ['https', tlsPort, 'management.tls.port']
        : ['http', plainPort, 'management.port'];
    const url = reachableUrl(`${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`);
    return {
      url,
      notice: `no node is running in ${dir} (${config.file}'s data_dir); talking to ${url}, its management.host and ${key}`,
    };
  }
  const defaultDir = resolve(sources.cwd, 'styx-data');
  const own = await readRunningNode(defaultDir);
  if (own.state === 'running') return fromRunningNode(defaultDir, own, undefined);
  const clusterNodes = await runningLocalClusterNodes(resolve(sources.cwd, 'styx-cluster'));
  const [first] = clusterNodes;
  if (first !== undefined) {
    const names = clusterNodes.map((n) => n.node.node).join(', ');
    return fromRunningNode(
      first.dir,
      first,
      `talking to ${first.node.node} at ${first.node.management_url} (running in ./styx-cluster: ${names}; --node or --data-dir picks another)`,
    );
  }
  const why =
    own.state === 'stale'
      ? `the node of ${defaultDir} (pid ${own.node.pid}) is not running`
      : `no node is running in ${defaultDir}`;
  return {
    url: DEFAULT_NODE,
    notice: `${why}; talking to ${DEFAULT_NODE} (--node URL, $STYX_NODE or --data-dir DIR choose the node)`,
  };
}

function fromRunningNode(dir: string, lookup: RunningNodeLookup, notice: string | undefined): NodeChoice {
  if (lookup.state === 'none') {
    throw new NodeNotFoundError(`no node is running in ${dir} (no ${RUNNING_NODE_FILE}): is it started?`);
  }
  if (lookup.state === 'stale') {
    throw new NodeNotFoundError(`the node of ${dir} (pid ${lookup.node.pid}) is not running any more`);
  }
  if (lookup.node.management_url === null) {
    throw new UsageError(
      `the node running in ${dir} (${lookup.node.node}) has no management API (--management-port 0)`,
    );
  }
  return { url: reachableUrl(lookup.node.management_url), notice };
}

/** The running nodes under a local cluster's directory (node-1, node-2, ...), in order. */
async function runningLocalClusterNodes(
  root: string,
): Promise<Array<{ dir: string; state: 'running'; node: RunningNode }>> {
  const names = await readdir(root).catch(() => [] as string[]);
  const found = [];
  for (const name of names.filter((n) => /^node-\d+$/.test(n)).sort((a, b) => nodeIndex(a) - nodeIndex(b))) {
    const dir = join(root, name);
    const lookup = await readRunningNode(dir);
    if (lookup.state === 'running' && lookup.node.management_url !== null) found.push({ dir, ...lookup });
  }
  return found;
}

function nodeIndex(name: string): number {
  return Number(name.slice('node-'.length));
}
