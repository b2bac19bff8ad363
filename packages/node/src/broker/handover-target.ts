/**
 * Whom a leader hands its group's leadership to when it must stop leading (it leaves the group, or
 * its node is drained for maintenance): the voter that answers and is furthest along. Raft catches
 * the transferee up before it campaigns and refuses proposals meanwhile, so a voter that is down or
 * far behind (one just restarted) would stall the group for nothing. Pure: the caller gives the
 * group's voters, its replication progress as the leader sees it, and who may take over.
 */

/** A member's replication progress as the leader sees it (`RaftGroupLog.progress`). */
export interface VoterProgress {
  /** Highest index known to be on the member's disk. */
  readonly match: number;
  /** Heard from within the last election timeout. */
  readonly active: boolean;
}

export interface HandOverInput {
  /** The leader itself (never chosen). */
  readonly self: string;
  /** The group's voters, in the group's order (ties go to the first). */
  readonly voters: readonly string[];
  readonly progress: ReadonlyMap<string, VoterProgress>;
  /** Whether a voter may lead (e.g. one the group keeps, or one not drained itself). */
  readonly eligible: (id: string) => boolean;
}

/**
 * The voter to hand over to, or undefined when none answers (then keep leading and ask again
 * later: a group without a leader serves nobody).
 *
 * Example: voters a (self), b (active, match 90), c (active, match 100), d (inactive, match 120):
 * c, the furthest of those that answer.
 */
export function handOverTarget(input: HandOverInput): string | undefined {
  let next: string | undefined;
  let nextMatch = -1;
  for (const id of input.voters) {
    if (id === input.self || !input.eligible(id)) continue;
    const pr = input.progress.get(id);
    if (pr === undefined || !pr.active || pr.match <= nextMatch) continue;
    next = id;
    nextMatch = pr.match;
  }
  return next;
}
