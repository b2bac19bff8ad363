import { ConfChangeTransition, ConfChangeType } from '../conf-change.ts';
import { MemoryRaftStorage } from '../memory-raft-storage.ts';
import type { MutationName, Mutations } from '../mutations.ts';
import { NO_MUTATIONS } from '../mutations.ts';
import { RaftCore } from '../raft-core.ts';
import type { Entry, Message, NodeId, RaftConfig, Ready } from '../types.ts';
import { EMPTY_CONF_STATE, MessageType, message, RaftRole } from '../types.ts';
import type { InFlight } from './scripted-cluster.ts';
import { ScriptedCluster } from './scripted-cluster.ts';

/**
 * Scripted scenarios, one per classic Raft bug of engineering.md §1.6 that random simulation
 * reaches rarely or cannot observe (etcd's paper tests and interaction tests in spirit). Each
 * scenario drives a `ScriptedCluster` message by message into the situation where the bug bites,
 * then reports what went wrong: the checker's violations, plus the scenario's own expectation
 * (for liveness and bounds, which no safety checker sees). A correct core reports nothing; with the
 * scenario's mutation on, it must report something — that is the mutation gate.
 */
export interface ClassicBugScenario {
  /** The §1.6 item. */
  readonly bug: string;
  readonly mutation: MutationName;
  /** Run against a core with `mutations`; returns the problems found (empty = passed). */
  readonly run: (mutations: Mutations) => readonly string[];
}

/** Quiet, deterministic defaults: no pre-vote or check-quorum unless a scenario needs them. */
const BASE: Omit<RaftConfig, 'id' | 'applied'> = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: false,
  checkQuorum: false,
};

/** One entry per append message, so a script can hold or drop single entries. */
const ONE_ENTRY = 1;

function isApp(m: Message): boolean {
  return m.type === MessageType.App;
}

function problems(cluster: ScriptedCluster, extra: readonly string[] = []): string[] {
  return [...cluster.violations, ...extra];
}

/** Run `body`, turning a thrown error (a broken invariant inside the core) into a problem. */
function guarded(cluster: () => ScriptedCluster, body: (c: ScriptedCluster) => string[]): readonly string[] {
  let c: ScriptedCluster | undefined;
  try {
    c = cluster();
    return body(c);
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return [...(c?.violations ?? []), `exception: ${text}`];
  }
}

/** #1: an append acknowledgement must wait for the fsync of what it acknowledges. */
function persistBeforeReply(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.holdSync('b');
      c.put('a', 1, 10);
      c.stabilize();
      c.releaseSync('b');
      c.stabilize();
      return problems(c);
    },
  );
}

/**
 * #2: Figure 8 of the Raft paper. s1 replicates its old-term entry X to a majority while leading a
 * later term; counting replicas would commit X, yet s5 can still be elected and overwrite it.
 */
function figure8(mutations: Mutations): readonly string[] {
  const ids = ['s1', 's2', 's3', 's4', 's5'];
  return guarded(
    () => new ScriptedCluster({ voters: ids, raft: { ...BASE, maxSizePerMsg: ONE_ENTRY }, mutations }),
    (c) => {
      c.elect('s1');
      c.stabilize();
      // (a) s1 appends X, which reaches s2 only.
      for (const id of ['s3', 's4', 's5']) c.cut('s1', id);
      c.put('s1', 1, 100);
      c.stabilize();
      // (b) s1 crashes; s5 wins the next term with s3 and s4 and appends Y, which reaches nobody.
      c.crash('s1');
      c.heal();
      c.cut('s5', 's2');
      c.winElection('s5');
      c.drop(() => true);
      c.put('s5', 1, 200);
      c.flushSyncs();
      c.drop(() => true);
      // (c) s5 crashes; s1 restarts and wins a later term with s2 and s3, then replicates X to s3
      // but not its own no-op: X sits on a majority with no entry of s1's term above it.
      c.crash('s5');
      c.heal();
      c.cut('s1', 's4');
      c.restart('s1');
      c.winElection('s1');
      const term = c.core('s1').term;
      const noopReachesS3 = (m: Message): boolean =>
        isApp(m) &&
        m.to === 's3' &&
        c.core('s3').lastIndex >= m.index &&
        m.entries.some((e) => e.term === term);
      for (let round = 0; round < 50; round++) {
        c.drop(noopReachesS3);
        const synced = c.flushSyncs();
        if (c.deliver() === 0 && synced === 0) break;
      }
      // (d) s1 crashes; s5 restarts and wins with s3 and s4 (its last term is higher than theirs).
      c.crash('s1');
      c.drop(() => true);
      c.heal();
      c.cut('s5', 's2');
      c.restart('s5');
      for (let attempt = 0; attempt < 3 && c.core('s5').role !== RaftRole.Leader; attempt++) {
        c.campaign('s5');
        c.stabilize();
      }
      return problems(c);
    },
  );
}

/** #3: a stale, duplicated append whose entries all match must not cut the log short. */
function staleAppendTruncates(mutations: Mutations): readonly string[] {
  return guarded(
    () =>
      new ScriptedCluster({
        voters: ['a', 'b', 'c'],
        raft: { ...BASE, maxSizePerMsg: ONE_ENTRY, maxInflightMsgs: 16 },
        mutations,
      }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.cut('a', 'c');
      c.put('a', 1, 10);
      c.put('a', 1, 11);
      c.flushSyncs(); // a's own write: its second append goes out
      const first = c.inflight.find(
        (f) => f.message.to === 'b' && isApp(f.message) && f.message.entries.length > 0,
      );
      if (first === undefined) return ['scenario: no append to b'];
      const stale: InFlight = first;
      c.deliver((m) => m.to === 'b');
      c.flushSyncs();
      c.deliver((m) => m.to === 'a');
      c.flushSyncs();
      // The leader committed both entries with b; b has not heard the new commit yet.
      c.drop((m) => m.to === 'b');
      c.deliverOne(stale); // the network replays the first append
      c.flushSyncs();
      c.crash('a');
      c.drop(() => true); // what a sent is lost with it
      c.heal();
      c.elect('b');
      c.stabilize();
      return problems(c);
    },
  );
}

/**
 * #4: a follower holding uncommitted entries of an old term must not commit them because a new
 * leader's commit index covers their indexes.
 */
function commitPastProven(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('b');
      c.stabilize();
      // b appends two entries nobody else receives, then is cut off.
      c.isolate('b');
      c.put('b', 1, 10);
      c.put('b', 1, 11);
      c.stabilize();
      c.heal();
      c.cut('b', 'a');
      c.cut('b', 'c');
      c.elect('a');
      c.put('a', 1, 20);
      c.put('a', 1, 21);
      c.stabilize();
      // b comes back; a's heartbeat reaches it before any append does.
      c.heal();
      c.tick('a');
      c.deliver((m) => m.type === MessageType.Heartbeat && m.to === 'b');
      c.flushSyncs();
      c.stabilize();
      return problems(c);
    },
  );
}

/** #7: a duplicated vote grant must count once: two leaders in one term otherwise. */
function duplicateVotes(mutations: Mutations): readonly string[] {
  const ids = ['a', 'b', 'c', 'd', 'e'];
  return guarded(
    () => new ScriptedCluster({ voters: ids, raft: BASE, mutations }),
    (c) => {
      // a and c campaign in the same term; b votes for a, d and e for c.
      c.cut('a', 'd');
      c.cut('a', 'e');
      c.cut('c', 'b');
      c.campaign('a');
      c.campaign('c');
      c.flushSyncs();
      c.deliver((m) => m.type === MessageType.Vote);
      c.flushSyncs();
      // The network duplicates b's grant to a.
      const fromB = c.inflight.find((f) => f.message.type === MessageType.VoteResp && f.message.from === 'b');
      if (fromB !== undefined) c.inflight.push(fromB);
      c.stabilize();
      return problems(c);
    },
  );
}

/**
 * #5: a message from an older term (a deposed leader's delayed append) must be dropped: processed,
 * it overwrites entries the new leader already counted as replicated.
 */
function staleTermMessage(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      // a is cut off and keeps appending; its append waits in the network.
      c.isolate('a');
      c.put('a', 1, 10);
      c.flushSyncs();
      const stale = c.take((m) => m.from === 'a');
      c.heal();
      c.cut('a', 'b');
      c.cut('a', 'c');
      // b leads the next term; its no-op reaches c, b commits it, c does not hear the commit.
      c.winElection('b');
      const noop = c.core('b').lastIndex;
      for (let round = 0; round < 10 && c.core('b').commitIndex < noop; round++) {
        c.flushSyncs();
        c.deliver((m) => (isApp(m) && m.to === 'c') || (m.type === MessageType.AppResp && m.to === 'b'));
      }
      c.drop(() => true);
      // The old leader's append arrives at c.
      c.heal();
      for (const item of stale) if (item.message.to === 'c') c.deliverOne(item);
      c.flushSyncs();
      c.crash('b');
      c.drop(() => true);
      c.elect('c');
      c.stabilize();
      return problems(c);
    },
  );
}

/** #6a: one vote per term: a voter asked by two candidates of one term must refuse the second. */
function voteTwice(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.campaign('a');
      c.campaign('c');
      c.stabilize();
      return problems(c);
    },
  );
}

/** #6b: a voter must refuse a candidate whose log is behind its own. */
function voteIgnoresLog(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.cut('a', 'c');
      c.put('a', 1, 10);
      c.stabilize();
      c.crash('a');
      c.heal();
      c.campaign('c');
      c.stabilize();
      return problems(c);
    },
  );
}

/** #8: winning a pre-vote is not winning an election. */
function preVoteElects(mutations: Mutations): readonly string[] {
  return guarded(
    () =>
      new ScriptedCluster({ voters: ['a', 'b', 'c', 'd', 'e'], raft: { ...BASE, preVote: true }, mutations }),
    (c) => {
      c.campaign('a');
      c.campaign('c');
      c.stabilize();
      return problems(c);
    },
  );
}

/** #9: a leader cut off from its quorum steps down within an election timeout. */
function checkQuorumStepDown(mutations: Mutations): readonly string[] {
  const electionTicks = 10;
  return guarded(
    () =>
      new ScriptedCluster({
        voters: ['a', 'b', 'c'],
        raft: { ...BASE, checkQuorum: true, electionTicks },
        mutations,
      }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.isolate('a');
      for (let i = 0; i < 2 * electionTicks; i++) {
        c.tick('a');
        c.stabilize();
      }
      const stillLeads = c.core('a').role === RaftRole.Leader;
      return problems(c, stillLeads ? ['a leader cut off from its quorum did not step down'] : []);
    },
  );
}

/** #10a: a deposed leader that has not noticed must not serve a read without a quorum round. */
function staleLeaderRead(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.put('a', 1, 10);
      c.stabilize();
      c.isolate('a');
      c.elect('b');
      const write = c.put('b', 1, 20);
      c.stabilize();
      if (!c.checker.committedIndexOf(write)) return ['scenario: the new leader did not commit'];
      c.get('a', 1);
      c.stabilize();
      c.checkHistory();
      return problems(c);
    },
  );
}

/** #10b: a new leader must not answer reads before an entry of its term commits. */
function readBeforeTermCommit(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.put('a', 1, 10);
      c.deliver((m) => isApp(m));
      c.flushSyncs();
      c.deliver((m) => m.to === 'a');
      c.flushSyncs();
      c.drop(() => true);
      c.crash('a');
      // b wins; its no-op (and with it the commit of a's write) is held back.
      c.campaign('b');
      for (let round = 0; round < 20; round++) {
        c.flushSyncs();
        if (c.deliver((m) => m.type === MessageType.Vote || m.type === MessageType.VoteResp) === 0) break;
      }
      if (c.core('b').role !== RaftRole.Leader) return ['scenario: b did not win'];
      c.drop((m) => isApp(m));
      c.get('b', 1);
      // Only heartbeats and their answers move: enough for a read-index round, not for a commit.
      for (let round = 0; round < 20; round++) {
        c.flushSyncs();
        c.drop((m) => isApp(m) || m.type === MessageType.AppResp);
        if (c.deliver((m) => m.type === MessageType.Heartbeat || m.type === MessageType.HeartbeatResp) === 0)
          break;
      }
      c.stabilize();
      c.checkHistory();
      return problems(c);
    },
  );
}

/**
 * #11: two membership changes in flight at once let two disjoint majorities form: {a,b,c} still
 * elects b with c, while a counts {a,d,e} out of {a,b,c,d,e}.
 */
function concurrentConfChanges(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.addNode('d');
      c.addNode('e');
      c.cut('a', 'c');
      const add = (id: NodeId): void => {
        c.proposeConfChange('a', {
          transition: ConfChangeTransition.Auto,
          changes: [{ type: ConfChangeType.AddVoter, nodeId: id }],
        });
      };
      add('d');
      try {
        add('e');
      } catch {
        // Refused while the first is pending: the correct behaviour.
      }
      c.flushSyncs();
      // Both reach b; a commits them (a + b of {a,b,c}) but b never hears the commit.
      c.deliver((m) => m.to === 'b' && isApp(m));
      c.flushSyncs();
      c.deliver((m) => m.to === 'a');
      c.flushSyncs();
      c.drop((m) => m.to === 'b' || m.from === 'b');
      // Partition {a, d, e} | {b, c}.
      c.heal();
      for (const x of ['a', 'd', 'e']) for (const y of ['b', 'c']) c.cut(x, y);
      c.campaign('b');
      c.stabilize();
      c.put('b', 1, 1);
      c.stabilize();
      for (let i = 0; i < 5; i++) {
        c.tick('a');
        c.stabilize();
      }
      if (c.core('a').role === RaftRole.Leader) {
        c.put('a', 1, 2);
        c.stabilize();
      }
      return problems(c);
    },
  );
}

/** #13: entries replaced while their fsync was in flight must still be written (ABA). */
function stableToAba(mutations: Mutations): readonly string[] {
  const ids = ['a', 'b', 'c', 'd', 'e'];
  return guarded(
    () => new ScriptedCluster({ voters: ids, raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      // a's next entry reaches b, whose fsync stalls.
      c.holdSync('b');
      for (const id of ['c', 'd', 'e']) c.cut('a', id);
      c.put('a', 1, 10);
      c.deliver((m) => m.to === 'b' && isApp(m));
      c.drop(() => true);
      // c wins a new term with d and e and overwrites that index on b while b's fsync is pending.
      c.heal();
      c.isolate('a');
      c.cut('c', 'b');
      c.winElection('c');
      c.heal();
      c.isolate('a');
      c.deliver((m) => m.to === 'b' && isApp(m));
      const index = c.core('b').lastIndex;
      const term = c.core('b').termAt(index);
      c.releaseSync('b');
      c.flushSyncs();
      // The replacement must survive the completion of the fsync that wrote the old entry. (Its
      // acknowledgement is held back when the entry reverts, so the checker alone may not see it.)
      const reverted = c.core('b').termAt(index) !== term || c.node('b').durable.term(index) !== term;
      c.stabilize();
      c.put('c', 1, 20);
      c.stabilize();
      return problems(
        c,
        reverted ? [`b's entry ${index} of term ${term} reverted to the one it replaced`] : [],
      );
    },
  );
}

/**
 * Pipelined storage writes (etcd's ABA race): a follower with three Readys in flight gets entries
 * of term 2, then term-3 entries that replace them, then the term-2 entries back from a term-4
 * leader. When the first Ready completes its entries match the log again, but the second is still
 * to overwrite them on disk: marking them stable then would make the core read the second Ready's
 * entries back from storage as its own log once that completes.
 */
function pipelinedAba(mutations: Mutations): readonly string[] {
  const storage = MemoryRaftStorage.bootstrap({ ...EMPTY_CONF_STATE, voters: ['a', 'b', 'c'] });
  const b = new RaftCore(
    { ...BASE, id: 'b', maxReadiesInFlight: 3 },
    storage,
    { nextInt: () => 0 },
    mutations,
  );
  const entries = (term: number): Entry[] =>
    [2, 3].map((index) => ({ term, index, type: 0, data: new Uint8Array() }));
  const append = (from: NodeId, term: number, entryTerm: number): Ready => {
    b.step(
      message(MessageType.App, from, 'b', term, {
        index: 1,
        logTerm: 1,
        commit: 1,
        entries: entries(entryTerm),
      }),
    );
    return b.ready();
  };
  const inFlight = [append('a', 2, 2), append('c', 3, 3), append('a', 4, 2)];
  const found: string[] = [];
  for (const rd of inFlight) {
    storage.persist(rd);
    b.advance();
    if (b.termAt(3) !== 2) {
      found.push(
        `b reads entry 3 of term ${String(b.termAt(3))} (disk ${storage.term(3)}), its log has term 2`,
      );
    }
  }
  return found;
}

/** #14: with no jitter, replicas that time out together split the vote forever. */
function electionJitter(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      for (let round = 0; round < 50 * 10 && c.leader() === undefined; round++) {
        c.tickAll();
        c.stabilize();
      }
      return problems(c, c.leader() === undefined ? ['no leader elected within 50 election timeouts'] : []);
    },
  );
}

/** #15: the inflight window and the uncommitted bytes bound hold. */
function boundedQueues(mutations: Mutations): readonly string[] {
  const maxInflightMsgs = 4;
  const maxUncommittedEntriesBytes = 256;
  return guarded(
    () =>
      new ScriptedCluster({
        voters: ['a', 'b', 'c'],
        raft: { ...BASE, maxSizePerMsg: ONE_ENTRY, maxInflightMsgs, maxUncommittedEntriesBytes },
        mutations,
      }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.cut('a', 'b');
      c.cut('a', 'c');
      let refused = 0;
      for (let i = 0; i < 40; i++) {
        try {
          c.put('a', 1, 100 + i, 16);
        } catch {
          refused++;
        }
      }
      const inflightToB = c.inflight.filter((f) => f.message.to === 'b' && isApp(f.message)).length;
      const found: string[] = [];
      if (inflightToB > maxInflightMsgs) {
        found.push(`${inflightToB} appends in flight to one follower, bound ${maxInflightMsgs}`);
      }
      if (refused === 0)
        found.push(`no proposal refused past ${maxUncommittedEntriesBytes} uncommitted bytes`);
      return problems(c, found);
    },
  );
}

/** #12: a snapshot at or below the commit index must not be installed (commit would go back). */
function staleSnapshot(mutations: Mutations): readonly string[] {
  return guarded(
    () =>
      new ScriptedCluster({
        voters: ['a', 'b', 'c'],
        raft: { ...BASE, snapshotChunkBytes: 16 },
        mutations,
        compactEvery: 3,
      }),
    (c) => {
      c.elect('a');
      c.stabilize();
      // c falls behind, a compacts, and c needs a snapshot; the snapshot's chunks are replayed
      // by the network long after c has caught up further.
      c.cut('a', 'c');
      for (let i = 0; i < 6; i++) c.put('a', 1, 10 + i, 8);
      c.stabilize();
      c.heal();
      c.tick('a');
      const snapshots: InFlight[] = [];
      for (let round = 0; round < 50; round++) {
        for (const f of c.inflight) if (f.message.type === MessageType.Snap) snapshots.push(f);
        c.flushSyncs();
        if (c.deliver() === 0) break;
      }
      for (let i = 0; i < 6; i++) c.put('a', 1, 30 + i, 8);
      c.stabilize();
      for (const f of snapshots) c.deliverOne(f);
      c.stabilize();
      if (snapshots.length === 0) return [...c.violations, 'scenario: no snapshot was sent'];
      return problems(c);
    },
  );
}

/**
 * Found by wide sweeps (seed 83005684): an acknowledgement made while an earlier fsync was in
 * flight must not leave once a newer leader's append replaced the entry it acknowledges. b holds
 * a's entries 2 and 3 (3 only in memory, its acknowledgement waiting for b's next sync) when c's
 * no-op of term 2 replaces both; b's next sync writes only c's entry 2.
 */
function ackOfReplacedEntry(mutations: Mutations): readonly string[] {
  const ids = ['a', 'b', 'c', 'd', 'e'];
  return guarded(
    () => new ScriptedCluster({ voters: ids, raft: { ...BASE, maxSizePerMsg: ONE_ENTRY }, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      for (const id of ['c', 'd', 'e']) c.cut('a', id);
      c.holdSync('b');
      c.put('a', 1, 10);
      c.flushSyncs();
      c.deliver((m) => m.to === 'b' && isApp(m));
      c.put('a', 1, 11);
      c.flushSyncs();
      c.deliver((m) => m.to === 'b' && isApp(m));
      const acked = c.core('b').lastIndex;
      c.drop(() => true);
      c.heal();
      c.isolate('a');
      c.winElection('c');
      c.deliver((m) => m.to === 'b' && isApp(m));
      const replaced = c.core('b').termAt(acked) !== 1;
      c.releaseSync('b');
      c.stabilize();
      return problems(c, replaced ? [] : [`scenario: b's entry ${acked} was not replaced`]);
    },
  );
}

/**
 * The group moves from {c, d, e} to {a, b, c} (a leading) while c is cut off: c keeps the stale
 * configuration {c, d, e}, so its vote requests go only to d and e, which are gone. It campaigns
 * `campaigns` times in vain meanwhile, so its term ends above everyone else's. Still isolated.
 */
function staleConfigVoter(c: ScriptedCluster, campaigns: number): void {
  const voter = (nodeId: NodeId) => ({
    transition: ConfChangeTransition.Auto,
    changes: [{ type: ConfChangeType.AddVoter, nodeId }],
  });
  const remove = (nodeId: NodeId) => ({
    transition: ConfChangeTransition.Auto,
    changes: [{ type: ConfChangeType.RemoveNode, nodeId }],
  });
  c.elect('d');
  c.stabilize();
  c.addNode('a');
  c.addNode('b');
  c.isolate('c');
  for (const change of [voter('a'), voter('b')]) {
    c.proposeConfChange('d', change);
    c.stabilize();
  }
  c.transferLeader('d', 'a');
  c.stabilize();
  for (const change of [remove('d'), remove('e')]) {
    c.proposeConfChange('a', change);
    c.stabilize();
  }
  c.crash('d');
  c.crash('e');
  for (let i = 0; i < campaigns; i++) {
    c.campaign('c');
    c.stabilize();
  }
}

/**
 * Found by wide sweeps (seed 55505479): a replica that missed the membership changes making the
 * current leader a voter, and raised its term meanwhile, must still be caught up. Its vote
 * requests go only to the members it knows (here, removed replicas), so only its answer to the
 * leader's heartbeat can tell the leader about its term. Without pre-vote and check-quorum.
 */
function staleConfigReplica(mutations: Mutations): readonly string[] {
  return guarded(
    () => new ScriptedCluster({ voters: ['c', 'd', 'e'], raft: BASE, mutations }),
    (c) => {
      staleConfigVoter(c, 3);
      c.heal();
      const write = c.put(c.leader() ?? 'a', 1, 10);
      for (let round = 0; round < 40 * (BASE.electionTicks ?? 10); round++) {
        c.tickAll();
        c.stabilize();
      }
      const leader = c.leader();
      const behind =
        leader === undefined ||
        !c.checker.committedIndexOf(write) ||
        c.core('c').commitIndex < c.core(leader).commitIndex;
      return problems(c, behind ? ['c, with a stale configuration and a higher term, never caught up'] : []);
    },
  );
}

/**
 * Found by wide sweeps (seed 7300026441): with the leader gone, b needs the vote of c, whose term
 * is far higher and whose stale configuration never sends b anything (no vote request, no
 * append). Only c's answer to b's lower-term vote request can tell b the term to outbid. Ignored,
 * b wins only once its term passes c's by campaigning, which c, campaigning at the same pace,
 * never lets happen: c starts more terms ahead than b can campaign within the bound. Without
 * pre-vote and check-quorum. Answered, b still has to time out before c does once (c votes for
 * itself in each of its terms), which the seed's timers give it well within the bound.
 */
function staleConfigCandidate(mutations: Mutations): readonly string[] {
  const electionTicks = BASE.electionTicks ?? 10;
  const bound = 40 * electionTicks;
  // b's election timeouts are at least `electionTicks`: it campaigns at most this often in `bound`.
  const campaignsInBound = bound / electionTicks;
  return guarded(
    () => new ScriptedCluster({ voters: ['c', 'd', 'e'], raft: BASE, mutations }),
    (c) => {
      staleConfigVoter(c, campaignsInBound + 5);
      const ahead = c.core('c').term - c.core('b').term;
      c.crash('a');
      c.heal();
      for (let round = 0; round < bound && c.leader() !== 'b'; round++) {
        c.tickAll();
        c.stabilize();
      }
      const setup = ahead > campaignsInBound ? [] : [`scenario: c is only ${ahead} terms ahead of b`];
      const stuck = c.leader() === 'b' ? [] : [`b, needing c's vote, was not elected within ${bound} ticks`];
      return problems(c, [...setup, ...stuck]);
    },
  );
}

/**
 * Found by wide sweeps (seed 92005786): with the leader gone, c, whose log is too old to win, runs
 * on a clock twice as fast as b's, the one replica that can win. Each of c's vote requests raises
 * b's term; if that restarted b's election timer, b (timeouts of at least `electionTicks` of its
 * ticks) would never campaign, since c campaigns more often than that. Without pre-vote.
 */
function fastLosingCandidate(mutations: Mutations): readonly string[] {
  const bound = 40 * (BASE.electionTicks ?? 10);
  return guarded(
    () => new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: BASE, mutations }),
    (c) => {
      c.elect('a');
      c.stabilize();
      c.isolate('c');
      const write = c.put('a', 1, 10);
      c.stabilize();
      c.crash('a');
      c.heal();
      for (let round = 0; round < bound && c.leader() === undefined; round++) {
        c.tick('c', 2);
        c.tick('b');
        c.stabilize();
      }
      const setup =
        c.checker.committedIndexOf(write) === undefined ? ['scenario: a and b did not commit the write'] : [];
      const stuck = c.leader() === 'b' ? [] : [`b was not elected within ${bound} of its ticks`];
      return problems(c, [...setup, ...stuck]);
    },
  );
}

export const CLASSIC_BUG_SCENARIOS: readonly ClassicBugScenario[] = [
  { bug: '#1 persist before reply', mutation: 'replyBeforePersist', run: persistBeforeReply },
  {
    bug: '#2 commit only current-term entries (Figure 8)',
    mutation: 'commitOldTermByCounting',
    run: figure8,
  },
  {
    bug: '#3 truncate only at a real conflict',
    mutation: 'truncateOnEveryAppend',
    run: staleAppendTruncates,
  },
  {
    bug: '#4 never commit past what the message proved',
    mutation: 'commitPastProven',
    run: commitPastProven,
  },
  { bug: '#5 lower terms are dropped', mutation: 'acceptStaleTerm', run: staleTermMessage },
  { bug: '#6a one vote per term', mutation: 'voteTwice', run: voteTwice },
  { bug: '#6b vote only for up-to-date logs', mutation: 'voteIgnoresLog', run: voteIgnoresLog },
  { bug: '#7 count each voter once', mutation: 'countDuplicateVotes', run: duplicateVotes },
  { bug: '#8 pre-vote changes nothing', mutation: 'preVoteElects', run: preVoteElects },
  {
    bug: '#9 check-quorum steps a cut-off leader down',
    mutation: 'checkQuorumNeverStepsDown',
    run: checkQuorumStepDown,
  },
  { bug: '#10a reads confirm leadership', mutation: 'readIndexWithoutQuorum', run: staleLeaderRead },
  {
    bug: '#10b reads wait for a current-term commit',
    mutation: 'readIndexBeforeTermCommit',
    run: readBeforeTermCommit,
  },
  {
    bug: '#11 one membership change at a time',
    mutation: 'concurrentConfChanges',
    run: concurrentConfChanges,
  },
  { bug: '#12 no stale snapshot install', mutation: 'installStaleSnapshot', run: staleSnapshot },
  {
    bug: '#13 no stable marking across a replacement (ABA)',
    mutation: 'stableToIgnoresTerm',
    run: stableToAba,
  },
  {
    bug: 'pipelined storage: no stable marking across a replacement still in flight (ABA)',
    mutation: 'stableIgnoresOverwriteInFlight',
    run: pipelinedAba,
  },
  { bug: '#14 randomized election timeouts', mutation: 'fixedElectionTimeout', run: electionJitter },
  { bug: '#15 bounded queues', mutation: 'unboundedQueues', run: boundedQueues },
  {
    bug: 'sweep: no acknowledgement of a replaced entry',
    mutation: 'ackReplacedEntries',
    run: ackOfReplacedEntry,
  },
  {
    bug: 'sweep: a stale leader is told of a higher term',
    mutation: 'silentToStaleLeader',
    run: staleConfigReplica,
  },
  {
    bug: 'sweep: a lower-term candidate is told of a higher term',
    mutation: 'silentToStaleCandidate',
    run: staleConfigCandidate,
  },
  {
    bug: 'sweep: a newer term from a candidate keeps the election timer running',
    mutation: 'termBumpResetsElectionTimer',
    run: fastLosingCandidate,
  },
];

/** Run every scenario against the correct core (NO_MUTATIONS). */
export function runScenariosClean(): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const scenario of CLASSIC_BUG_SCENARIOS) out.set(scenario.bug, scenario.run(NO_MUTATIONS));
  return out;
}
