import type { ConfState, MemberProgress, MembershipChange, NodeId } from '@styx/raft';
import type { Logger } from '../logging/logger.ts';
import type { MetadataGroup } from '../metadata/metadata-group.ts';

/** Most voters the metadata group has; further members follow as learners (DESIGN.md). */
export const MAX_METADATA_VOTERS = 5;
/** How often the leader checks the group's membership against the cluster's, ms. */
const RECONCILE_INTERVAL_MS = 1_000;

/** What `nextMembershipChange` decides from. */
export interface MembershipInput {
  /** The cluster's members, oldest first (the metadata's `clusterNodes`). */
  readonly members: readonly { readonly id: NodeId }[];
  /** The metadata group's current Raft membership. */
  readonly conf: ConfState;
  /** Replication progress per replica, as the leader sees it. */
  readonly progress: ReadonlyMap<NodeId, MemberProgress>;
  /** The leader's applied index: a learner at or past it has caught up. */
  readonly appliedIndex: number;
  readonly maxVoters: number;
}

/**
 * The next change that brings the metadata group's Raft membership in line with the cluster's
 * members, one at a time (Raft takes one change at a time): first drop replicas of nodes no longer
 * members (forgotten), then add new members as learners, then promote learners that are caught up
 * and reachable, oldest member first, up to `maxVoters`. A learner is never promoted while behind or
 * silent: a voter that cannot vote would only make the quorum harder to reach. Pure.
 */
export function nextMembershipChange(input: MembershipInput): MembershipChange | undefined {
  const { conf, progress } = input;
  const wanted = new Set(input.members.map((m) => m.id));
  const voters = new Set([...conf.voters, ...conf.votersOutgoing]);
  const learners = new Set([...conf.learners, ...conf.learnersNext]);
  for (const id of learners) if (!wanted.has(id)) return { type: 'remove', nodeId: id };
  for (const id of voters) if (!wanted.has(id) && voters.size > 1) return { type: 'remove', nodeId: id };
  for (const { id } of input.members) {
    if (!voters.has(id) && !learners.has(id)) return { type: 'addLearner', nodeId: id };
  }
  if (voters.size >= input.maxVoters) return undefined;
  for (const { id } of input.members) {
    if (!learners.has(id)) continue;
    const pr = progress.get(id);
    if (pr?.active && pr.match >= input.appliedIndex) return { type: 'addVoter', nodeId: id };
  }
  return undefined;
}

export interface MembershipReconcilerOptions {
  readonly group: MetadataGroup;
  readonly logger: Logger;
  readonly maxVoters?: number;
}

/**
 * Runs on every node, acts only while the node leads the metadata group: every second (and when
 * poked after a join or forget) it applies `nextMembershipChange`, one change at a time.
 */
export class MembershipReconciler {
  readonly #options: MembershipReconcilerOptions;
  readonly #log: Logger;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #again = false;

  constructor(options: MembershipReconcilerOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'membership' });
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.poke(), RECONCILE_INTERVAL_MS);
    this.#timer.unref();
    this.poke();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Look again now (a member joined or was forgotten). */
  poke(): void {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    void this.#run();
  }

  async #run(): Promise<void> {
    const { group } = this.#options;
    this.#busy = true;
    try {
      do {
        this.#again = false;
        if (this.#timer === undefined || group.log.role !== 'leader') return;
        const change = nextMembershipChange({
          members: group.state.clusterNodes(),
          conf: group.log.membership,
          progress: group.log.progress(),
          appliedIndex: group.log.appliedIndex,
          maxVoters: this.#options.maxVoters ?? MAX_METADATA_VOTERS,
        });
        if (change === undefined) return;
        this.#log.info(
          { change: change.type, node: change.nodeId },
          'changing the metadata group membership',
        );
        const conf = await group.log.changeMembership([change]);
        this.#log.info({ voters: conf.voters, learners: conf.learners }, 'metadata group membership changed');
        this.#again = true;
      } while (this.#again);
    } catch (error) {
      this.#log.warn({ err: error }, 'metadata group membership change failed; retrying');
    } finally {
      this.#busy = false;
    }
  }
}
