/**
 * Where each durable queue's Raft group lives (DESIGN.md "Cluster"): which nodes hold its replicas,
 * which of them should lead, and the operator verbs that move them (`rabbitmq-queues grow`, `shrink`,
 * `rebalance`). Every function here is pure and deterministic: membership and the current assignment
 * in, a decision out; no I/O, clock or randomness. Where a choice is otherwise arbitrary (equal
 * loads), it is broken by a stable hash of the queue key and the node id (rendezvous hashing), so
 * equal-load clusters still spread queues and every node computes the same answer.
 */
import { ReplyCode } from '@styx/client/wire';
import type { NodeId } from '@styx/raft';
import { resourceText } from '../metadata/replies.ts';
import { ClusterError } from './errors.ts';

/** Replicas per queue when the declare gives no `x-quorum-initial-group-size` (RabbitMQ's default). */
export const DEFAULT_QUORUM_GROUP_SIZE = 3;

/** The declare argument that picks a queue's initial number of replicas. */
export const INITIAL_GROUP_SIZE_ARG = 'x-quorum-initial-group-size';

/** A queue's identity. */
export interface QueueRef {
  readonly vhost: string;
  readonly name: string;
}

/** The key of a queue in an `Assignment`: `queueKey` of its vhost and name. */
export type QueueKey = string;

/** A cluster member as placement sees it. */
export interface PlacementMember {
  readonly id: NodeId;
  /** Whether the node is reachable now; absent means online. */
  readonly online?: boolean;
}

/** Where one queue's Raft group lives. */
export interface QueuePlacement {
  /** Nodes holding a replica, distinct. */
  readonly replicas: readonly NodeId[];
  /** The node that leads (or should lead) the group; absent while unknown or leaderless. */
  readonly leader?: NodeId;
}

/** The placement of every queue, by `queueKey`. */
export type Assignment = ReadonlyMap<QueueKey, QueuePlacement>;

/**
 * The key of a queue in an `Assignment`. JSON of `[vhost, name]`: unambiguous whatever characters
 * the names hold (a vhost may contain '/'), and readable in logs. `parseQueueKey` inverts it.
 */
export function queueKey(queue: QueueRef): QueueKey {
  return JSON.stringify([queue.vhost, queue.name]);
}

/** The queue a `queueKey` names; `PlacementInputError` for a string `queueKey` did not make. */
export function parseQueueKey(key: QueueKey): QueueRef {
  let parsed: unknown;
  try {
    parsed = JSON.parse(key);
  } catch (error) {
    throw new PlacementInputError(`malformed queue key ${JSON.stringify(key)}`, { cause: error });
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    typeof parsed[0] !== 'string' ||
    typeof parsed[1] !== 'string'
  ) {
    throw new PlacementInputError(`malformed queue key ${JSON.stringify(key)}`);
  }
  return { vhost: parsed[0], name: parsed[1] };
}

/**
 * A declare's `x-quorum-initial-group-size` is not an integer >= 1. Crosses to the client as
 * 406 PRECONDITION_FAILED with RabbitMQ's text, e.g.
 * "invalid arg 'x-quorum-initial-group-size' for queue 'q' in vhost '/': {value_zero,0}".
 */
export class QuorumGroupSizeError extends ClusterError {
  /** The AMQP reply code the channel closes with. */
  readonly replyCode = ReplyCode.PRECONDITION_FAILED;
  /** The refused value. */
  readonly size: number;
  constructor(queue: QueueRef, size: number) {
    super(
      'QUORUM_GROUP_SIZE_INVALID',
      `invalid arg '${INITIAL_GROUP_SIZE_ARG}' for ${resourceText('queue', queue.vhost, queue.name)}: ${sizeProblem(size)}`,
    );
    this.size = size;
  }
}

/**
 * Placement was asked something that breaks its invariants (no members, a member listed twice, a
 * bad default size or strategy, a malformed queue key): a bug in the caller, not a client's mistake.
 */
export class PlacementInputError extends ClusterError {
  constructor(reason: string, options?: ErrorOptions) {
    super('PLACEMENT_INPUT_INVALID', reason, options);
  }
}

/** RabbitMQ's check_initial_cluster_size_arg problem term for a size `isValidSize` refuses. */
function sizeProblem(size: number): string {
  if (!Number.isInteger(size)) return '{unacceptable_type,double}';
  if (size < 0) return `{value_negative,${size}}`;
  return `{value_zero,${size}}`;
}

function isValidSize(size: number): boolean {
  return Number.isInteger(size) && size >= 1;
}

/** What `placeReplicas` decides from. */
export interface PlaceReplicasInput {
  /** The queue being placed. */
  readonly queue: QueueRef;
  /** The cluster's members, oldest first; at least one, ids distinct. */
  readonly members: readonly PlacementMember[];
  /**
   * The current placement of the other queues; an entry for `queue` itself is ignored, so placing
   * a queue again gives the same answer. Replicas and leaders on non-members are not counted.
   * Read only when `load` is absent (one of the two is needed; absent both, nothing is counted).
   */
  readonly assignment?: Assignment;
  /**
   * The replicas and leaders each member holds (`countLoad` of an assignment, kept by the caller;
   * members absent count 0). A broker placing thousands of queues keeps these counts rather than
   * building the whole assignment for each declare.
   */
  readonly load?: ReadonlyMap<NodeId, MemberLoad>;
  /** The declare's `x-quorum-initial-group-size`: an integer >= 1 (else `QuorumGroupSizeError`). */
  readonly size?: number;
  /** Replicas when `size` is absent: an integer >= 1; `DEFAULT_QUORUM_GROUP_SIZE` when absent. */
  readonly defaultSize?: number;
}

/** What a member holds, as placement counts it. */
export interface MemberLoad {
  /** Queues with a replica on it. */
  replicas: number;
  /** Queues it leads. */
  leaders: number;
}

/** Where a new queue's Raft group goes. */
export interface ReplicaPlacement {
  /** `min(size, members.length)` distinct members, the leader first, then in preference order. */
  readonly replicas: NodeId[];
  /** The preferred leader, one of `replicas`. */
  readonly leader: NodeId;
}

/**
 * Place a new queue's replicas on `min(size ?? defaultSize, members.length)` members: online nodes
 * before offline ones, then the fewest replicas, then the fewest leaders, then a stable per-queue
 * hash (so on a fresh, evenly loaded cluster successive queues start on different nodes). The
 * preferred leader is the chosen replica (online first) that leads the fewest queues.
 *
 * Worked example: members a, b, c, d all online; a and b hold 2 replicas each, c and d 1 each, a
 * leads 2. Size 3 picks c and d (1 replica) and then whichever of a and b leads fewer: b. The
 * leader is whichever of b, c, d leads fewest, the queue's hash breaking ties.
 *
 * Placing queues one after another this way keeps every node's replica count within 1 of every
 * other's (all nodes online): the counts are always some k and k+1, and each queue takes the k's first.
 */
export function placeReplicas(input: PlaceReplicasInput): ReplicaPlacement {
  const { queue, members } = input;
  if (input.size !== undefined && !isValidSize(input.size)) throw new QuorumGroupSizeError(queue, input.size);
  const defaultSize = input.defaultSize ?? DEFAULT_QUORUM_GROUP_SIZE;
  if (!isValidSize(defaultSize)) {
    throw new PlacementInputError(`default quorum group size ${defaultSize} is not an integer >= 1`);
  }
  checkMembers(members);
  const key = queueKey(queue);
  const wanted = Math.min(input.size ?? defaultSize, members.length);
  const load = input.load ?? countLoad(input.assignment ?? new Map(), key);
  const candidates = members.map((m, index) => {
    const l = load.get(m.id);
    return {
      id: m.id,
      online: m.online !== false,
      replicas: l?.replicas ?? 0,
      leaders: l?.leaders ?? 0,
      rank: rendezvous(key, m.id),
      index,
    };
  });
  const byHash = (a: (typeof candidates)[number], b: (typeof candidates)[number]): number =>
    a.rank - b.rank || a.index - b.index;
  candidates.sort(
    (a, b) =>
      Number(b.online) - Number(a.online) || a.replicas - b.replicas || a.leaders - b.leaders || byHash(a, b),
  );
  const chosen = candidates.slice(0, wanted);
  const leaderOrder = (a: (typeof candidates)[number], b: (typeof candidates)[number]): number =>
    Number(b.online) - Number(a.online) || a.leaders - b.leaders || byHash(a, b);
  const leader = chosen.reduce((best, c) => (leaderOrder(c, best) < 0 ? c : best));
  return { replicas: [leader.id, ...chosen.filter((c) => c !== leader).map((c) => c.id)], leader: leader.id };
}

/** One leadership transfer: `queueKey`'s group should hand leadership from `from` to `to`. */
export interface LeaderTransfer {
  readonly queueKey: QueueKey;
  readonly from: NodeId;
  readonly to: NodeId;
}

/** What `rebalanceLeaders` decides from. */
export interface RebalanceInput {
  /** The cluster's members, oldest first; ids distinct. */
  readonly members: readonly PlacementMember[];
  readonly assignment: Assignment;
}

/**
 * The leadership transfers that even out leaders over the online members (`rabbitmq-queues
 * rebalance quorum`; also run after a node joins and has been given replicas by `growPlan`). A queue
 * only moves to an online node that already holds one of its replicas; queues without a leader, or
 * led by an offline node or a non-member, are neither counted nor moved (an election will place
 * them). Each queue appears at most once, sorted by key.
 *
 * This is the optimal semi-matching problem (Harvey, Ladner, Lovász, Tamir 2003): the leader counts
 * are as even as the replicas allow (least sum of squares, hence least maximum) exactly when no
 * "cost-reducing path" exists, a chain of transfers from a node leading `c` queues to one leading at
 * most `c - 2` where each step moves a queue to a node holding its replica. The loop finds such paths
 * by breadth-first search from the busiest node and applies them until none is left: each strictly
 * lowers the sum of squares, so it ends. When every online node holds a replica of every queue, the
 * result differs by at most 1 between nodes.
 *
 * Worked example: a leads q1 and q2 (replicas a, b), b leads q3 (replicas b, c), c leads nothing.
 * No direct move helps (a -> b leaves 1, 2, 0), but the path a -q1-> b -q3-> c does: q1 a -> b, q3
 * b -> c, ending at 1, 1, 1.
 */
export function rebalanceLeaders(input: RebalanceInput): LeaderTransfer[] {
  checkMembers(input.members);
  const online = input.members.filter((m) => m.online !== false).map((m) => m.id);
  const order = new Map(online.map((id, i) => [id, i]));
  const leaders = new LeaderIndex(online);
  for (const key of [...input.assignment.keys()].sort()) {
    const placed = input.assignment.get(key);
    const leader = placed?.leader;
    if (leader === undefined || !order.has(leader)) continue;
    const targets = [...new Set(placed?.replicas ?? [])].filter((id) => order.has(id));
    leaders.lead(key, leader, targets);
  }

  for (;;) {
    const path = findCostReducingPath(online, order, leaders);
    if (path === undefined) break;
    for (const step of path) leaders.move(step.queueKey, step.from, step.to);
  }

  const transfers: LeaderTransfer[] = [];
  for (const [key, to] of leaders.leaderOf) {
    const from = input.assignment.get(key)?.leader;
    if (from !== undefined && from !== to) transfers.push({ queueKey: key, from, to });
  }
  return transfers.sort((a, b) => (a.queueKey < b.queueKey ? -1 : a.queueKey > b.queueKey ? 1 : 0));
}

/**
 * Who leads which movable queue while a rebalance is planned, indexed by node pair: `movable(x, y)`
 * holds the queues `x` leads that have a replica on `y`, in the order `x` came to lead them. The
 * path search then walks the few nodes rather than every queue: planning 10,000 queues once took
 * 25 s of one event-loop turn (a search over every queue per transfer, for thousands of
 * transfers): the metadata leader missed its pings, was suspected, and its queue links dropped.
 */
class LeaderIndex {
  /** Each movable queue's planned leader. */
  readonly leaderOf = new Map<QueueKey, NodeId>();
  readonly #led = new Map<NodeId, number>();
  readonly #targets = new Map<QueueKey, readonly NodeId[]>();
  readonly #movable = new Map<NodeId, Map<NodeId, Set<QueueKey>>>();

  constructor(online: readonly NodeId[]) {
    for (const x of online) {
      this.#led.set(x, 0);
      this.#movable.set(x, new Map(online.filter((y) => y !== x).map((y) => [y, new Set<QueueKey>()])));
    }
  }

  /** Queues `node` leads (planned). */
  count(node: NodeId): number {
    return this.#led.get(node) ?? 0;
  }

  /** `x`'s queue movers: for each other online node, the queues `x` could hand to it. */
  edgesOf(x: NodeId): ReadonlyMap<NodeId, ReadonlySet<QueueKey>> {
    return this.#movable.get(x) ?? new Map();
  }

  /** `key`, with replicas on the online nodes `targets`, is led by `leader`. */
  lead(key: QueueKey, leader: NodeId, targets: readonly NodeId[]): void {
    this.#targets.set(key, targets);
    this.#add(key, leader);
  }

  move(key: QueueKey, from: NodeId, to: NodeId): void {
    const edges = this.#movable.get(from);
    for (const t of this.#targets.get(key) ?? []) edges?.get(t)?.delete(key);
    this.#led.set(from, this.count(from) - 1);
    this.#add(key, to);
  }

  #add(key: QueueKey, leader: NodeId): void {
    this.leaderOf.set(key, leader);
    this.#led.set(leader, this.count(leader) + 1);
    const edges = this.#movable.get(leader);
    for (const t of this.#targets.get(key) ?? []) if (t !== leader) edges?.get(t)?.add(key);
  }
}

/**
 * A shortest chain of transfers from the busiest node that has one to a node leading at least 2
 * fewer queues (the least loaded such node, then the nearest, then the oldest member), or undefined.
 * Each step moves the first queue (in the order its node came to lead them) the node can hand on.
 */
function findCostReducingPath(
  online: readonly NodeId[],
  order: ReadonlyMap<NodeId, number>,
  leaders: LeaderIndex,
): LeaderTransfer[] | undefined {
  const count = (id: NodeId): number => leaders.count(id);
  const sources = [...online].sort((a, b) => count(b) - count(a) || byOrder(order)(a, b));
  for (const source of sources) {
    const limit = count(source) - 2;
    if (limit < 0) return undefined;
    // Breadth-first over "x leads a queue with a replica on y"; `via` is the step that reached a node.
    const via = new Map<NodeId, LeaderTransfer | null>([[source, null]]);
    let frontier = [source];
    let best: NodeId | undefined;
    while (frontier.length > 0 && best === undefined) {
      const next: NodeId[] = [];
      for (const x of frontier) {
        for (const [y, queues] of leaders.edgesOf(x)) {
          if (via.has(y)) continue;
          const first = queues.values().next();
          if (first.done === true) continue;
          via.set(y, { queueKey: first.value, from: x, to: y });
          next.push(y);
        }
      }
      next.sort(byOrder(order));
      for (const y of next) {
        if (count(y) <= limit && (best === undefined || count(y) < count(best))) best = y;
      }
      frontier = next;
    }
    if (best === undefined) continue;
    const path: LeaderTransfer[] = [];
    for (let step = via.get(best); step; step = via.get(step.from)) path.unshift(step);
    return path;
  }
  return undefined;
}

/** A name pattern: a stateless `test` (metadata/name-pattern.ts's NamePattern; a RegExp without `g`/`y`). */
export interface NameMatcher {
  test(name: string): boolean;
}

/** Which queues `growPlan` touches: every queue, a pattern on the queue name, or patterns on name and vhost. */
export type QueueSelector =
  | 'all'
  | NameMatcher
  | { readonly name?: NameMatcher; readonly vhost?: NameMatcher };

/** `rabbitmq-queues grow` strategies: every matching queue, or only those with an even replica count. */
export type GrowStrategy = 'all' | 'even';

/** What `growPlan` decides from. */
export interface GrowInput {
  /** The node to add a replica on (normally one that just joined). */
  readonly node: NodeId;
  readonly assignment: Assignment;
  readonly selector: QueueSelector;
  /** 'even' grows only queues with an even number of replicas, so each ends with an odd number. */
  readonly strategy: GrowStrategy;
}

/** One replica to add or remove. */
export interface ReplicaChange {
  readonly queueKey: QueueKey;
  readonly node: NodeId;
}

/**
 * `rabbitmq-queues grow <node> all|even`: a replica on `node` for every selected queue that lacks
 * one (with 'even', only queues whose replica count is even), sorted by queue key. Patterns are
 * matched with their stateless `test` (the API compiles them with the linear-time engine).
 */
export function growPlan(input: GrowInput): ReplicaChange[] {
  const { node, strategy } = input;
  if (strategy !== 'all' && strategy !== 'even') {
    throw new PlacementInputError(`unknown grow strategy ${JSON.stringify(strategy)} (use 'all' or 'even')`);
  }
  const changes: ReplicaChange[] = [];
  for (const key of [...input.assignment.keys()].sort()) {
    const replicas = new Set(input.assignment.get(key)?.replicas ?? []);
    if (replicas.has(node)) continue;
    if (strategy === 'even' && replicas.size % 2 !== 0) continue;
    if (!selects(input.selector, parseQueueKey(key))) continue;
    changes.push({ queueKey: key, node });
  }
  return changes;
}

function isNameMatcher(selector: QueueSelector): selector is NameMatcher {
  return typeof selector === 'object' && typeof (selector as Partial<NameMatcher>).test === 'function';
}

function selects(selector: QueueSelector, queue: QueueRef): boolean {
  if (selector === 'all') return true;
  if (isNameMatcher(selector)) return selector.test(queue.name);
  return (
    (selector.name === undefined || selector.name.test(queue.name)) &&
    (selector.vhost === undefined || selector.vhost.test(queue.vhost))
  );
}

/** What `shrinkPlan` decides from. */
export interface ShrinkInput {
  /** The node to remove replicas from (normally one about to be decommissioned). */
  readonly node: NodeId;
  readonly assignment: Assignment;
}

/** The outcome of `shrinkPlan`. */
export interface ShrinkPlan {
  /** Replicas to remove, sorted by queue key. */
  readonly remove: ReplicaChange[];
  /** Queues whose only replica is on `node`: removing it would lose the queue, so they are left. */
  readonly skipped: { readonly queueKey: QueueKey; readonly reason: 'last replica' }[];
}

/**
 * `rabbitmq-queues shrink <node>`: remove `node`'s replica from every queue that has one, except
 * where it is the last replica (those are reported in `skipped`, as RabbitMQ reports "last_member").
 * Removing a leader's replica is fine: Raft moves leadership when the leader leaves the group.
 */
export function shrinkPlan(input: ShrinkInput): ShrinkPlan {
  const remove: ReplicaChange[] = [];
  const skipped: ShrinkPlan['skipped'] = [];
  for (const key of [...input.assignment.keys()].sort()) {
    const replicas = new Set(input.assignment.get(key)?.replicas ?? []);
    if (!replicas.has(input.node)) continue;
    if (replicas.size <= 1) skipped.push({ queueKey: key, reason: 'last replica' });
    else remove.push({ queueKey: key, node: input.node });
  }
  return { remove, skipped };
}

function checkMembers(members: readonly PlacementMember[]): void {
  if (members.length === 0) throw new PlacementInputError('no cluster members to place on');
  const seen = new Set<NodeId>();
  for (const { id } of members) {
    if (seen.has(id)) throw new PlacementInputError(`cluster member ${JSON.stringify(id)} is listed twice`);
    seen.add(id);
  }
}

/** Replicas (distinct per queue) and leaders per node, over every queue of `assignment` but `skip`. */
export function countLoad(assignment: Assignment, skip?: QueueKey): Map<NodeId, MemberLoad> {
  const load = new Map<NodeId, MemberLoad>();
  const of = (id: NodeId): MemberLoad => {
    let l = load.get(id);
    if (l === undefined) {
      l = { replicas: 0, leaders: 0 };
      load.set(id, l);
    }
    return l;
  };
  for (const [key, placement] of assignment) {
    if (key === skip) continue;
    for (const id of new Set(placement.replicas)) of(id).replicas++;
    if (placement.leader !== undefined) of(placement.leader).leaders++;
  }
  return load;
}

function byOrder(order: ReadonlyMap<NodeId, number>): (a: NodeId, b: NodeId) => number {
  return (a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0);
}

/**
 * Rendezvous (highest-random-weight) rank of `node` for queue `key`: a 32-bit hash of both, so each
 * queue has its own stable order over the nodes. FNV-1a over the UTF-16 units, then murmur3's fmix32
 * so that keys differing in one character still land far apart.
 */
function rendezvous(key: QueueKey, node: NodeId): number {
  let h = 0x811c9dc5;
  const s = `${key}\u0000${node}`;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
