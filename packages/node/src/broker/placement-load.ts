/**
 * What each cluster member holds (replicas, leaders), as new queues are placed: counted over every
 * queue at most once per `maxAgeMs`, and kept current in between by the placements this node makes.
 *
 * Why: placing a queue once meant building the whole assignment (every queue's key, replicas and
 * leader) for each declare. At 10,000 queues that is ~10k records visited per declare, and a burst
 * of declares slowed down as the cluster filled (failover-storm: 500 declares a second at first,
 * 50 at 9,000 queues). Placement only needs per-member counts; between two counts the leaders
 * elsewhere may move (that is what the next count sees), while this node's own placements — the
 * ones that would otherwise all land on the same least-loaded member — are counted at once.
 */
import type { MemberLoad } from '../cluster/placement.ts';

/** A member's node id. */
type NodeId = string;

/** How old the counts may get before placing a queue counts again, ms. */
export const PLACEMENT_LOAD_MAX_AGE_MS = 1_000;

export class PlacementLoad {
  readonly #count: () => Map<NodeId, MemberLoad>;
  readonly #maxAgeMs: number;
  #load: Map<NodeId, MemberLoad> | undefined;
  #countedAt = 0;

  /** `count`: every member's load, counted over every queue (`countLoad`: the expensive part). */
  constructor(count: () => Map<NodeId, MemberLoad>, maxAgeMs = PLACEMENT_LOAD_MAX_AGE_MS) {
    this.#count = count;
    this.#maxAgeMs = maxAgeMs;
  }

  /** The members' load now: the last count if it is recent enough, with the placements since. */
  current(now = performance.now()): ReadonlyMap<NodeId, MemberLoad> {
    if (this.#load === undefined || now - this.#countedAt >= this.#maxAgeMs) {
      this.#load = this.#count();
      this.#countedAt = now;
    }
    return this.#load;
  }

  /** A queue was just placed on `replicas` (distinct), to be led by `leader`. */
  placed(replicas: readonly NodeId[], leader: NodeId): void {
    const load = this.#load;
    if (load === undefined) return;
    for (const id of replicas) this.#of(load, id).replicas++;
    this.#of(load, leader).leaders++;
  }

  #of(load: Map<NodeId, MemberLoad>, id: NodeId): MemberLoad {
    let l = load.get(id);
    if (l === undefined) {
      l = { replicas: 0, leaders: 0 };
      load.set(id, l);
    }
    return l;
  }
}
