import { decodeConfChange } from '../conf-change.ts';
import type { MemoryRaftStorage } from '../memory-raft-storage.ts';
import { jointCommittedIndex } from '../quorum.ts';
import type { RaftCore } from '../raft-core.ts';
import type { Entry, HardState, Message, NodeId, Snapshot } from '../types.ts';
import { EntryType, MessageType, RaftRole } from '../types.ts';
import { decodeKvCommand } from './kv-machine.ts';

/** What the checker may look at on a replica: its core, its disk, and which life it is in. */
export interface CheckedNode {
  readonly id: NodeId;
  readonly incarnation: number;
  readonly core: RaftCore;
  readonly durable: MemoryRaftStorage;
}

/** One entry of the canonical committed sequence. */
interface CanonicalEntry {
  readonly term: number;
  /**
   * The term it was committed in: the term of the first replica seen with it committed (a leader
   * counts its quorum before any follower can learn the commit from it, and both are in that term).
   */
  readonly commitTerm: number;
  readonly type: number;
  readonly data: Uint8Array;
}

/** What the checker saw at one (index, term): every log holding it must agree on all of it. */
interface Sighting {
  readonly term: number;
  readonly prevTerm: number;
  readonly data: Uint8Array;
}

/** The volatile monitors of one incarnation of a replica. */
interface NodeWatch {
  incarnation: number;
  commit: number;
  applied: number;
  /** Term in which this incarnation was last seen leading (0 = not leading). */
  ledTerm: number;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The simulator's invariant checker. It is told about every Ready, every persisted write, every
 * released message and every applied entry, and after each event it looks at the replica that
 * event touched, so each check costs little and a violation is reported at the event that caused it:
 *
 * - election safety: at most one leader per term;
 * - log matching: an (index, term) has one payload and one predecessor term in every log;
 * - leader completeness: a new leader holds every committed entry and every entry a quorum of an
 *   earlier leader's configuration durably acknowledged in that leader's term;
 * - state machine safety: one canonical committed sequence; every commit and every apply matches it,
 *   and so does the machine's digest and state after a replay or a snapshot restore;
 * - monotonicity: commit and applied never go back within an incarnation; the durable term, vote
 *   and commit never go back across crashes;
 * - durability of promises: a released vote or append acknowledgement is covered by durable state;
 * - provenance: every committed command traces to one proposal, at most once.
 */
export class Checker {
  readonly violations: string[] = [];
  /** Bound on recorded violations (the run stops at the first one anyway). */
  static readonly MAX_VIOLATIONS = 20;

  readonly #leaderOfTerm = new Map<number, NodeId>();
  /** The canonical committed sequence; index 0 unused, index 1 = the bootstrap snapshot. */
  readonly #canonical: (CanonicalEntry | undefined)[] = [undefined];
  #canonicalLength = 0;
  /** Machine digest after applying index i (first replica to get there sets it). */
  readonly #digests: number[] = [];
  readonly #stateHashes = new Map<number, number>();
  readonly #sightings: (Sighting[] | undefined)[] = [];
  readonly #watch = new Map<NodeId, NodeWatch>();
  readonly #durable = new Map<NodeId, HardState>();
  readonly #proposedOps = new Set<number>();
  readonly #committedOps = new Map<number, number>();
  readonly #proposedConfChanges = new Set<string>();
  /** Per term: the highest durably acknowledged index per replica (acks to that term's leader). */
  readonly #acks = new Map<number, Map<NodeId, number>>();
  /** Per term: the first index of the leader's term (its no-op). */
  readonly #termStart = new Map<number, number>();
  /** Per term: the highest index of that term a quorum durably acknowledged. */
  readonly #quorumAcked = new Map<number, number>();
  /** Index at which each committed op was first applied anywhere (for the linearizability check). */
  readonly firstApplied = new Map<number, number>();

  constructor(bootstrapTerm: number) {
    this.#canonical.push({
      term: bootstrapTerm,
      commitTerm: 0,
      type: EntryType.Normal,
      data: new Uint8Array(0),
    });
    this.#canonicalLength = 1;
    this.#digests[1] = 0;
  }

  get canonicalLength(): number {
    return this.#canonicalLength;
  }

  /** The canonical entry at `index`, if committed. */
  canonical(index: number): CanonicalEntry | undefined {
    return this.#canonical[index];
  }

  get leaders(): ReadonlyMap<number, NodeId> {
    return this.#leaderOfTerm;
  }

  fail(message: string): void {
    if (this.violations.length < Checker.MAX_VIOLATIONS) this.violations.push(message);
  }

  recordProposal(opId: number): void {
    this.#proposedOps.add(opId);
  }

  recordConfChangeProposal(context: string): void {
    this.#proposedConfChanges.add(context);
  }

  /** Whether op `opId` is in the canonical committed sequence, and at which index. */
  committedIndexOf(opId: number): number | undefined {
    return this.#committedOps.get(opId);
  }

  /** A replica (re)started: its volatile monitors start over; its durable state must not regress. */
  onStart(node: CheckedNode): void {
    const hard = node.durable.hardState();
    this.#watch.set(node.id, {
      incarnation: node.incarnation,
      commit: node.core.commitIndex,
      applied: 0,
      ledTerm: 0,
    });
    const prev = this.#durable.get(node.id);
    if (prev !== undefined) this.#checkDurableHardState(node.id, prev, hard);
    this.#durable.set(node.id, hard);
    const watch = this.#watch.get(node.id) as NodeWatch;
    watch.applied = node.durable.snapshot().meta.index;
  }

  /** After every event that touched `node`: leadership and commit. */
  observe(node: CheckedNode): void {
    const core = node.core;
    const watch = this.#watch.get(node.id);
    if (watch === undefined || watch.incarnation !== node.incarnation) return;
    if (core.role === RaftRole.Leader && watch.ledTerm !== core.term) {
      watch.ledTerm = core.term;
      this.#onLeader(node);
    } else if (core.role !== RaftRole.Leader) {
      watch.ledTerm = 0;
    }
    const commit = core.commitIndex;
    if (commit < watch.commit) {
      this.fail(`commit went back on ${node.id}: ${watch.commit} -> ${commit}`);
      watch.commit = commit;
      return;
    }
    if (commit > watch.commit) {
      if (core.role === RaftRole.Leader) this.#checkLeaderCommit(node, commit);
      this.#onCommit(node, watch.commit, commit);
      watch.commit = commit;
    }
  }

  /**
   * A leader may move its commit into its own term only over entries a quorum has durably
   * acknowledged in that term: the followers' released acknowledgements and its own durable log
   * (onPersisted). A leader that counted entries it had only handed to its disk commits past that.
   */
  #checkLeaderCommit(node: CheckedNode, commit: number): void {
    const core = node.core;
    const term = core.term;
    const start = this.#termStart.get(term);
    if (start === undefined || commit < start || this.#leaderOfTerm.get(term) !== node.id) return;
    const acks = this.#acks.get(term);
    const acked = jointCommittedIndex(core.membership().voters, (id) => acks?.get(id) ?? 0);
    if (acked < commit) {
      this.fail(
        `${node.id} committed index ${commit} in term ${term}, but a quorum durably acknowledged ` +
          `only up to ${acked}`,
      );
    }
  }

  #onLeader(node: CheckedNode): void {
    const core = node.core;
    const term = core.term;
    const previous = this.#leaderOfTerm.get(term);
    if (previous !== undefined && previous !== node.id) {
      this.fail(`election safety: ${previous} and ${node.id} both lead term ${term}`);
      return;
    }
    this.#leaderOfTerm.set(term, node.id);
    // The leader's first entry of its term (its no-op).
    let start = core.lastIndex;
    while (start > core.firstIndex && core.termAt(start - 1) === term) start--;
    if (!this.#termStart.has(term)) this.#termStart.set(term, start);
    // Leader completeness: every entry committed in an earlier term is in its log (or under its
    // snapshot). Entries committed in later terms need not be: a leader of an old term can still
    // be elected late by voters that have not heard of the newer one.
    const first = core.firstIndex;
    const snapIndex = first - 1;
    if (snapIndex > this.#canonicalLength) {
      this.fail(
        `leader ${node.id} (term ${term}) has a snapshot at ${snapIndex} past the commit ${this.#canonicalLength}`,
      );
    }
    for (let index = Math.max(first, 2); index <= this.#canonicalLength; index++) {
      const canonical = this.#canonical[index] as CanonicalEntry;
      if (canonical.commitTerm >= term) continue;
      const found = core.termAt(index);
      if (found !== canonical.term) {
        this.fail(
          `leader completeness: ${node.id} leads term ${term} without committed entry ${index} ` +
            `(term ${canonical.term}, it has ${String(found)})`,
        );
        return;
      }
    }
    // Every entry a quorum acknowledged in an earlier leader's own term must be in this log.
    for (const [ackTerm, index] of this.#quorumAcked) {
      if (ackTerm >= term) continue;
      if (index <= snapIndex) {
        const canonical = this.#canonical[index];
        if (canonical !== undefined && canonical.term !== ackTerm) {
          this.fail(`quorum-acknowledged entry ${index} (term ${ackTerm}) replaced in the canonical log`);
        }
        continue;
      }
      const found = core.termAt(index);
      if (found !== ackTerm) {
        this.fail(
          `durability: entry ${index} of term ${ackTerm} was durably acknowledged by a quorum, but ` +
            `${node.id} leads term ${term} with ${String(found)} there`,
        );
        return;
      }
    }
  }

  #onCommit(node: CheckedNode, from: number, to: number): void {
    const core = node.core;
    const first = core.firstIndex;
    let lo = from + 1;
    if (lo < first) {
      // Committed through a snapshot: its last entry must be canonical.
      const snapIndex = first - 1;
      const canonical = this.#canonical[snapIndex];
      if (canonical === undefined) {
        this.fail(`${node.id} committed ${snapIndex} through a snapshot the checker never saw committed`);
      } else if (canonical.term !== core.termAt(snapIndex)) {
        this.fail(
          `${node.id} installed a snapshot at ${snapIndex} of term ${core.termAt(snapIndex)}, canonical ${canonical.term}`,
        );
      }
      lo = first;
    }
    if (lo > to) return;
    const entries = core.entries(lo, to + 1);
    for (const entry of entries) this.#commitEntry(node.id, entry, core.term);
  }

  #commitEntry(id: NodeId, entry: Entry, commitTerm: number): void {
    const index = entry.index;
    const canonical = this.#canonical[index];
    if (canonical !== undefined) {
      if (
        canonical.term !== entry.term ||
        canonical.type !== entry.type ||
        !sameBytes(canonical.data, entry.data)
      ) {
        this.fail(
          `state machine safety: ${id} committed (${index}, term ${entry.term}) but the canonical entry ` +
            `${index} has term ${canonical.term}`,
        );
      }
      return;
    }
    if (index !== this.#canonicalLength + 1) {
      this.fail(`${id} committed ${index} but the canonical log ends at ${this.#canonicalLength}`);
      return;
    }
    this.#canonical[index] = { term: entry.term, commitTerm, type: entry.type, data: entry.data };
    this.#canonicalLength = index;
    this.#checkProvenance(id, entry);
  }

  #checkProvenance(id: NodeId, entry: Entry): void {
    if (entry.type === EntryType.ConfChange) {
      let context: string;
      let empty: boolean;
      try {
        const cc = decodeConfChange(entry.data);
        context = cc.context;
        empty = cc.changes.length === 0;
      } catch (error) {
        this.fail(`committed conf change ${entry.index} does not decode: ${String(error)}`);
        return;
      }
      if (context === '' ? !empty : !this.#proposedConfChanges.has(context)) {
        this.fail(`committed conf change ${entry.index} (${context}) from nowhere (via ${id})`);
      }
      return;
    }
    let command: ReturnType<typeof decodeKvCommand>;
    try {
      command = decodeKvCommand(entry.data);
    } catch (error) {
      this.fail(`committed entry ${entry.index} does not decode: ${String(error)}`);
      return;
    }
    if (command === undefined) return; // a leader's no-op
    if (!this.#proposedOps.has(command.opId)) {
      this.fail(`committed entry ${entry.index} carries op ${command.opId}, never proposed (via ${id})`);
      return;
    }
    const already = this.#committedOps.get(command.opId);
    if (already !== undefined) {
      this.fail(`op ${command.opId} committed twice: at ${already} and ${entry.index}`);
      return;
    }
    this.#committedOps.set(command.opId, entry.index);
  }

  /** The replica is about to persist `entries` (a Ready): check them against every other log. */
  onEntries(node: CheckedNode, entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0] as Entry;
    let prevTerm = node.core.termAt(first.index - 1);
    if (prevTerm === undefined) return;
    for (const entry of entries) {
      this.#sight(node.id, entry, prevTerm);
      prevTerm = entry.term;
    }
  }

  #sight(id: NodeId, entry: Entry, prevTerm: number): void {
    let list = this.#sightings[entry.index];
    if (list === undefined) {
      list = [];
      this.#sightings[entry.index] = list;
    }
    for (const seen of list) {
      if (seen.term !== entry.term) continue;
      if (seen.prevTerm !== prevTerm || !sameBytes(seen.data, entry.data)) {
        this.fail(
          `log matching: (${entry.index}, term ${entry.term}) on ${id} differs from another log ` +
            `(prev term ${prevTerm} vs ${seen.prevTerm})`,
        );
      }
      return;
    }
    list.push({ term: entry.term, prevTerm, data: entry.data });
  }

  /** The replica's write completed: its durable hard state must only move forward. */
  onPersisted(node: CheckedNode): void {
    const hard = node.durable.hardState();
    const prev = this.#durable.get(node.id);
    if (prev !== undefined) this.#checkDurableHardState(node.id, prev, hard);
    this.#durable.set(node.id, hard);
    const last = node.durable.lastIndex();
    if (hard.commit > last)
      this.fail(`${node.id}: durable commit ${hard.commit} past durable last index ${last}`);
    // The leader's own durable log counts as its acknowledgement.
    const core = node.core;
    if (core.role === RaftRole.Leader) this.#recordAck(node, core.term, node.id, last);
  }

  #checkDurableHardState(id: NodeId, prev: HardState, next: HardState): void {
    if (next.term < prev.term) this.fail(`${id}: durable term went back ${prev.term} -> ${next.term}`);
    else if (next.term === prev.term && prev.vote !== undefined && next.vote !== prev.vote) {
      this.fail(`${id}: durable vote changed within term ${next.term}: ${prev.vote} -> ${String(next.vote)}`);
    }
    if (next.commit < prev.commit)
      this.fail(`${id}: durable commit went back ${prev.commit} -> ${next.commit}`);
  }

  /**
   * A message leaves the replica. A vote grant or an append acknowledgement promises durable state:
   * check the replica's disk holds it NOW (a crash right after must not break the promise).
   * `leaderNode` resolves a term's leader, to track what quorums acknowledged.
   */
  onRelease(node: CheckedNode, m: Message, leaderNode: (id: NodeId) => CheckedNode | undefined): void {
    if (m.type === MessageType.VoteResp && !m.reject) {
      const hard = node.durable.hardState();
      if (hard.term < m.term || (hard.term === m.term && hard.vote !== m.to)) {
        this.fail(
          `${node.id} granted its vote to ${m.to} in term ${m.term} before persisting it ` +
            `(durable term ${hard.term}, vote ${String(hard.vote)})`,
        );
      }
      return;
    }
    if (m.type !== MessageType.AppResp || m.reject || m.index === 0) return;
    const durable = node.durable;
    const hard = durable.hardState();
    if (hard.term < m.term) {
      this.fail(
        `${node.id} acknowledged an append in term ${m.term} before persisting the term (${hard.term})`,
      );
      return;
    }
    const index = m.index;
    const snapIndex = durable.firstIndex() - 1;
    if (index > durable.lastIndex()) {
      this.fail(
        `${node.id} acknowledged index ${index} to ${m.to} before persisting it (durable last ${durable.lastIndex()})`,
      );
      return;
    }
    // An acknowledgement names the term of the entry it acknowledges (see RaftCore): the disk must
    // hold that very entry, not an older one at the same index.
    if (m.logTerm > 0 && index > snapIndex && durable.term(index) !== m.logTerm) {
      this.fail(
        `${node.id} acknowledged index ${index} of term ${m.logTerm} to ${m.to}, but its durable ` +
          `entry there has term ${durable.term(index)}`,
      );
      return;
    }
    const leader = leaderNode(m.to);
    if (leader === undefined) return;
    // The acknowledgement says our log matches the leader's up to `index`; the leader's log only
    // grows during its term, so while it still leads that term it can be compared directly.
    const leaderCore = leader.core;
    if (index > snapIndex && leaderCore.role === RaftRole.Leader && leaderCore.term === m.term) {
      const expected = leaderCore.termAt(index);
      if (expected !== undefined && durable.term(index) !== expected) {
        this.fail(
          `${node.id} acknowledged index ${index} to ${m.to}, but its durable entry there has term ` +
            `${durable.term(index)}, the leader's ${expected}`,
        );
        return;
      }
    }
    this.#recordAck(leader, m.term, node.id, index);
  }

  #recordAck(leader: CheckedNode, term: number, from: NodeId, index: number): void {
    if (this.#leaderOfTerm.get(term) !== leader.id) return;
    let acks = this.#acks.get(term);
    if (acks === undefined) {
      acks = new Map();
      this.#acks.set(term, acks);
    }
    if ((acks.get(from) ?? 0) >= index) return;
    acks.set(from, index);
    const core = leader.core;
    if (core.role !== RaftRole.Leader || core.term !== term) return;
    const start = this.#termStart.get(term);
    if (start === undefined) return;
    const ackMap = acks;
    const quorum = jointCommittedIndex(core.membership().voters, (id) => ackMap.get(id) ?? 0);
    if (!Number.isFinite(quorum) || quorum < start) return;
    if ((this.#quorumAcked.get(term) ?? 0) < quorum) this.#quorumAcked.set(term, quorum);
  }

  /** The replica applied `entry`; `digest` is its machine's digest after it. */
  onApply(node: CheckedNode, entry: Entry, digest: number, time: number): void {
    const watch = this.#watch.get(node.id);
    if (watch !== undefined && watch.incarnation === node.incarnation) {
      if (entry.index !== watch.applied + 1) {
        this.fail(`${node.id} applied ${entry.index} after ${watch.applied}`);
      }
      watch.applied = entry.index;
    }
    const canonical = this.#canonical[entry.index];
    if (canonical === undefined) {
      this.fail(`${node.id} applied ${entry.index}, which is not committed`);
      return;
    }
    if (canonical.term !== entry.term || !sameBytes(canonical.data, entry.data)) {
      this.fail(`state machine safety: ${node.id} applied a different entry at ${entry.index}`);
      return;
    }
    const expected = this.#digests[entry.index];
    if (expected === undefined) this.#digests[entry.index] = digest;
    else if (expected !== digest)
      this.fail(`${node.id}: machine digest at ${entry.index} differs from another replica's`);
    if (entry.type === EntryType.Normal && entry.data.byteLength > 0) {
      const command = decodeKvCommand(entry.data);
      if (command !== undefined && !this.firstApplied.has(command.opId))
        this.firstApplied.set(command.opId, time);
    }
  }

  /** The replica restored its machine from `snapshot` (installed from the leader or at restart). */
  onRestore(node: CheckedNode, snapshot: Snapshot, digest: number, stateHash: number): void {
    const index = snapshot.meta.index;
    const watch = this.#watch.get(node.id);
    if (watch !== undefined && watch.incarnation === node.incarnation) {
      if (index < watch.applied)
        this.fail(`${node.id}: applied went back to ${index} from ${watch.applied} (snapshot)`);
      watch.applied = index;
    }
    if (index <= 1) return;
    const canonical = this.#canonical[index];
    if (canonical === undefined) {
      this.fail(`${node.id} restored a snapshot at ${index}, which is not committed`);
      return;
    }
    if (canonical.term !== snapshot.meta.term)
      this.fail(`${node.id} restored a snapshot of the wrong term at ${index}`);
    const expected = this.#digests[index];
    if (expected === undefined) this.#digests[index] = digest;
    else if (expected !== digest)
      this.fail(`${node.id}: snapshot digest at ${index} differs from the replay's`);
    this.#checkStateHash(node.id, index, stateHash);
  }

  /** The replica cut a snapshot of its machine at `index`. */
  onSnapshotTaken(node: CheckedNode, index: number, stateHash: number): void {
    this.#checkStateHash(node.id, index, stateHash);
  }

  #checkStateHash(id: NodeId, index: number, stateHash: number): void {
    const expected = this.#stateHashes.get(index);
    if (expected === undefined) this.#stateHashes.set(index, stateHash);
    else if (expected !== stateHash)
      this.fail(`${id}: machine state at ${index} differs from another replica's`);
  }
}
