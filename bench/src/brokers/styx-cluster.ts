/**
 * An N-node Styx cluster on loopback, as README "A cluster" describes and `styx local-cluster` does,
 * but on free ports and in the bench's temp dir: node 1 forms the cluster, the others join it with
 * `--join`, all share one secret file. Ready once every node's management API shows every node a
 * running member, the metadata group's voters complete and one agreed leader.
 */
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerStartError } from './broker.ts';
import { distinctFreePorts } from './free-port.ts';
import type { StyxNode } from './styx-node.ts';
import { amqpListenerArgs, startStyxNode } from './styx-node.ts';

/**
 * How long the nodes get to form the cluster once all listen, ms. Here a 3-node cluster is formed
 * about 3 s after node 1 starts; learners are promoted one at a time.
 */
const FORM_TIMEOUT_MS = 60_000;
/** Pause between two looks at the cluster's state, ms. */
const POLL_INTERVAL_MS = 200;
/** One management request, ms (a node busy joining may answer late; the poll tries again). */
const REQUEST_TIMEOUT_MS = 2_000;
/** The metadata group's most voters (README "A cluster": more members follow as learners). */
const MAX_METADATA_VOTERS = 5;
/** Log lines per node quoted in a launch error (the whole ring of each would bury the reason). */
const QUOTED_LOG_LINES = 20;

/** A cluster member as `GET /api/cluster` lists it (the fields the bench reads). */
export interface ClusterMemberJson {
  readonly name: string;
  readonly running: boolean;
  readonly metadata_role: 'voter' | 'learner' | 'none';
}

/** `GET /api/cluster`'s answer (the fields the bench reads). */
export interface ClusterJson {
  readonly self: { readonly name: string };
  readonly metadata_leader: { readonly id: string } | null;
  readonly members: readonly ClusterMemberJson[];
}

/** A node of the cluster: what `startStyxNode` gives, and what it takes to start it again. */
export interface StyxClusterNode extends StyxNode {
  /** Its management API (and `/metrics`) on 127.0.0.1. */
  readonly managementPort: number;
  /**
   * The flags it was started with: `startStyxNode(name, serverArgs)` starts it again on its data
   * (node 1's have no `--join`; a restarted node finds its cluster in its data dir).
   */
  readonly serverArgs: readonly string[];
}

/** A formed cluster: its nodes, node 1 first, and where its queues are led. */
export interface StyxCluster {
  readonly nodes: StyxClusterNode[];
  /** The index of the node leading `queue` (vhost '/') as node 1 knows it; undefined while none. */
  queueLeader(queue: string): Promise<number | undefined>;
}

/**
 * Starts `count` nodes with data dirs and the secret under `root` (which the caller made and
 * removes) and waits until they form one cluster; resolves to the nodes, node 1 first. Node i's
 * AMQP listener is on `amqpPorts[i]` (0: off); `extraArgs` go to every node. On any failure every
 * node started is stopped before the BrokerStartError is thrown.
 */
export async function startStyxCluster(
  count: number,
  root: string,
  amqpPorts: readonly number[],
  extraArgs: readonly string[] = [],
): Promise<StyxCluster> {
  const secretFile = join(root, 'cluster-secret');
  await writeClusterSecret(secretFile);
  const names = Array.from({ length: count }, (_, i) => `styx-bench-${i + 1}`);
  const managementPorts = await distinctFreePorts(count);
  const started: StyxClusterNode[] = [];
  const start = async (i: number, joinAddress: string | undefined): Promise<StyxClusterNode> => {
    const amqpPort = amqpPorts[i] ?? 0;
    const managementPort = managementPorts[i] as number;
    const serverArgs = [
      '--data-dir',
      join(root, `node-${i + 1}`),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      // The management API is how the bench sees the cluster form (port 0 would turn it off).
      '--management-port',
      String(managementPort),
      // Port 0: the node takes a free port and logs it; the others learn it from node 1's log, so
      // no port is picked ahead and lost to a race.
      '--cluster-listen',
      '127.0.0.1:0',
      '--node-name',
      names[i] as string,
      '--cluster-secret-file',
      secretFile,
      ...(joinAddress === undefined ? [] : ['--join', joinAddress]),
      ...amqpListenerArgs(amqpPort),
      ...extraArgs,
    ];
    const node = await startStyxNode(names[i] as string, serverArgs, amqpPort === 0 ? undefined : amqpPort);
    const member: StyxClusterNode = Object.assign(node, { managementPort, serverArgs });
    started.push(member);
    return member;
  };
  try {
    const first = await start(0, undefined);
    const seed = first.clusterAddress;
    if (seed === undefined) throw new BrokerStartError(`Styx node ${first.name} logged no cluster address`);
    // The others join at once: joins are retried, and the leader adds members one change at a time.
    const results = await Promise.allSettled(names.slice(1).map((_, k) => start(k + 1, seed)));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const nodes = [...started].sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name));
    await waitForFormation(nodes, managementPorts, names);
    const queueLeader = async (queue: string): Promise<number | undefined> => {
      const leader = await queueLeaderName(managementPorts[0] as number, queue);
      const index = leader === null ? -1 : names.indexOf(leader);
      return index < 0 ? undefined : index;
    };
    return { nodes, queueLeader };
  } catch (err) {
    await Promise.all(started.map((n) => n.stop()));
    throw err;
  }
}

/**
 * What keeps `answer` (one node's view) from showing a formed cluster of the nodes `names`; undefined
 * when it shows one: every node a running member, min(N, 5) metadata voters, a leader known.
 */
export function formationProblem(answer: ClusterJson, names: readonly string[]): string | undefined {
  const who = answer.self.name;
  const missing = names.filter((n) => !answer.members.some((m) => m.name === n));
  if (missing.length > 0) return `${who} does not list ${missing.join(', ')} yet`;
  const down = answer.members.filter((m) => !m.running).map((m) => m.name);
  if (down.length > 0) return `${who} sees ${down.join(', ')} not running`;
  const voters = answer.members.filter((m) => m.metadata_role === 'voter').length;
  const wanted = Math.min(names.length, MAX_METADATA_VOTERS);
  if (voters < wanted) return `${who} has ${voters} of ${wanted} metadata voters (learners catching up)`;
  if (answer.metadata_leader === null) return `${who} knows no metadata leader`;
  return undefined;
}

/** The problem across all nodes' views: any node's own, else a disagreement on the leader. */
export function clusterProblem(
  answers: readonly ClusterJson[],
  names: readonly string[],
): string | undefined {
  for (const answer of answers) {
    const problem = formationProblem(answer, names);
    if (problem !== undefined) return problem;
  }
  const leaders = new Set(answers.map((a) => a.metadata_leader?.id));
  return leaders.size > 1 ? 'the nodes name different metadata leaders' : undefined;
}

/** Polls every node's `GET /api/cluster` until `clusterProblem` finds nothing, a node dies, or time runs out. */
async function waitForFormation(
  nodes: readonly StyxNode[],
  managementPorts: readonly number[],
  names: readonly string[],
): Promise<void> {
  const deadline = performance.now() + FORM_TIMEOUT_MS;
  let problem = 'not asked yet';
  while (performance.now() < deadline) {
    const dead = nodes.filter((n) => !n.alive());
    if (dead.length > 0) {
      throw new BrokerStartError(
        `Styx node ${dead.map((n) => n.name).join(', ')} exited while the cluster formed\n${quoteLogs(nodes)}`,
      );
    }
    try {
      const answers = await Promise.all(managementPorts.map((port) => clusterStatus(port)));
      const found = clusterProblem(answers, names);
      if (found === undefined) return;
      problem = found;
    } catch (err) {
      problem = (err as Error).message;
    }
    await sleep(POLL_INTERVAL_MS);
  }
  throw new BrokerStartError(
    `the ${nodes.length} Styx nodes did not form a cluster within ${FORM_TIMEOUT_MS} ms: ${problem}\n` +
      quoteLogs(nodes),
  );
}

/** The leader's node name of `queue` in vhost '/' (null while none), as the node on `managementPort` knows it. */
async function queueLeaderName(managementPort: number, queue: string): Promise<string | null> {
  const answer = (await managementGet(managementPort, `/api/queues/%2F/${encodeURIComponent(queue)}`)) as {
    readonly leader?: string | null;
  };
  return answer.leader ?? null;
}

/** One node's `GET /api/cluster`, as the default user (an administrator, allowed from loopback). */
async function clusterStatus(managementPort: number): Promise<ClusterJson> {
  return (await managementGet(managementPort, '/api/cluster')) as ClusterJson;
}

/** A management API read, as the default user (an administrator, allowed from loopback). */
async function managementGet(managementPort: number, path: string): Promise<unknown> {
  const url = `http://127.0.0.1:${managementPort}${path}`;
  const response = await fetch(url, {
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`);
  return await response.json();
}

/**
 * The shared secret, made the way `styx server` makes one (64 hex digits, mode 0600, never
 * overwritten): written by the bench itself rather than imported from packages/node's CLI, which the
 * bench only runs.
 */
async function writeClusterSecret(file: string): Promise<void> {
  await writeFile(file, `${randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
}

/** The last lines of every node's log, each under its name. */
function quoteLogs(nodes: readonly StyxNode[]): string {
  return nodes.map((n) => [`[${n.name}]`, ...n.recentLogs().slice(-QUOTED_LOG_LINES)].join('\n')).join('\n');
}
