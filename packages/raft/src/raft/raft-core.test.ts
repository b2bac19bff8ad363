import { describe, expect, it } from 'vitest';
import { ConfChangeTransition, ConfChangeType } from './conf-change.ts';
import { DropReason, ProposalDroppedError, RaftConfigError, UnexpectedMessageError } from './errors.ts';
import { MemoryRaftStorage } from './memory-raft-storage.ts';
import { RaftCore } from './raft-core.ts';
import { ScriptedCluster } from './sim/scripted-cluster.ts';
import type { Message, RaftConfig } from './types.ts';
import { EMPTY_CONF_STATE, MessageType, message, RaftRole } from './types.ts';

const QUIET: Omit<RaftConfig, 'id' | 'applied'> = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: false,
  checkQuorum: false,
};

function cluster(voters: string[], raft: Omit<RaftConfig, 'id' | 'applied'> = QUIET): ScriptedCluster {
  return new ScriptedCluster({ voters, raft });
}

function expectClean(c: ScriptedCluster): void {
  expect(c.violations).toEqual([]);
}

const fixedRandom = { nextInt: () => 0 };

describe('RaftCore: elections', () => {
  it('elects a leader that commits a no-op of its term on every replica', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    const term = c.core('a').term;
    for (const id of ['a', 'b', 'c']) {
      expect(c.core(id).commitIndex).toBe(2);
      expect(c.core(id).termAt(2)).toBe(term);
      expect(c.core(id).lead).toBe('a');
    }
    expectClean(c);
  });

  it('elects someone on its own once election timeouts pass (randomized, seeded)', () => {
    const c = cluster(['a', 'b', 'c']);
    for (let i = 0; i < 100 && c.leader() === undefined; i++) {
      c.tickAll();
      c.stabilize();
    }
    expect(c.leader()).toBeDefined();
    expectClean(c);
  });

  it('rejects a lower-term vote request with its term, which the candidate adopts to outbid it', () => {
    const c = cluster(['a', 'b', 'c']);
    c.isolate('c');
    for (let i = 0; i < 5; i++) {
      c.campaign('c');
      c.stabilize();
    }
    const high = c.core('c').term;
    c.heal();
    // b's quorum needs c, whose term is higher than any b campaigns in next.
    c.cut('a', 'b');
    c.campaign('b');
    expect(c.core('b').term).toBeLessThan(high);
    c.flushSyncs();
    c.deliver((m) => m.type === MessageType.Vote);
    c.flushSyncs();
    const answers = c.take((m) => m.from === 'c' && m.to === 'b');
    expect(answers.map((a) => a.message)).toMatchObject([
      { type: MessageType.VoteResp, term: high, reject: true },
    ]);
    for (const answer of answers) c.deliverOne(answer);
    // A follower of the higher term, with no leader; c neither changed its term nor its vote.
    expect(c.core('b').role).toBe(RaftRole.Follower);
    expect(c.core('b').term).toBe(high);
    expect(c.core('b').lead).toBeUndefined();
    expect(c.core('c').term).toBe(high);
    expect(c.core('c').vote).toBe('c');
    c.campaign('b');
    c.stabilize();
    expect(c.leader()).toBe('b');
    expect(c.core('b').term).toBe(high + 1);
    expectClean(c);
  });

  it('pre-vote: a node cut off and timing out does not raise its term, and rejoins quietly', () => {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, preVote: true, checkQuorum: true });
    c.elect('a');
    c.stabilize();
    const term = c.core('a').term;
    c.isolate('c');
    for (let i = 0; i < 60; i++) {
      c.tick('c');
      c.stabilize();
    }
    expect(c.core('c').term).toBe(term);
    expect(c.core('c').role).not.toBe(RaftRole.Leader);
    c.heal();
    c.tickAll(3);
    c.stabilize();
    expect(c.core('a').role).toBe(RaftRole.Leader);
    expect(c.core('a').term).toBe(term);
    expectClean(c);
  });

  it('check-quorum: followers that hear from a leader ignore vote requests from a disruptive node', () => {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, checkQuorum: true });
    c.elect('a');
    c.stabilize();
    const term = c.core('a').term;
    // c campaigns without pre-vote: its higher term would depose a, but b and a are in lease.
    c.campaign('c');
    c.stabilize();
    expect(c.core('b').term).toBe(term);
    expect(c.core('a').role).toBe(RaftRole.Leader);
    expectClean(c);
  });

  it('check-quorum: an isolated leader steps down within an election timeout', () => {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, checkQuorum: true });
    c.elect('a');
    c.stabilize();
    c.isolate('a');
    for (let i = 0; i < 20; i++) c.tick('a');
    expect(c.core('a').role).toBe(RaftRole.Follower);
  });
});

describe('RaftCore: a leader reported unreachable (forgetLeader)', () => {
  /** a, b and c with pre-vote and check-quorum (the lease forgetLeader lifts), a leading. */
  function ledByA(): ScriptedCluster {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, preVote: true, checkQuorum: true });
    c.elect('a');
    c.stabilize();
    return c;
  }

  /** Ticks `id` until it leaves the follower role (or `limit` ticks); returns how many it took. */
  function ticksToCampaign(c: ScriptedCluster, id: string, limit: number): number {
    for (let i = 1; i <= limit; i++) {
      c.tick(id);
      if (c.core(id).role !== RaftRole.Follower) return i;
    }
    return Number.POSITIVE_INFINITY;
  }

  it('replaces a crashed leader within electionTicks / 2 ticks of the word, not an election timeout', () => {
    const c = ledByA();
    const term = c.core('a').term;
    c.crash('a');
    c.forgetLeader('b', 'a');
    c.forgetLeader('c', 'a');
    expect(c.core('b').lead).toBeUndefined();
    expect(ticksToCampaign(c, 'b', 10)).toBeLessThanOrEqual(5);
    c.stabilize();
    expect(c.leader()).toBe('b');
    expect(c.core('b').term).toBe(term + 1);
    expectClean(c);
  });

  it('changes nothing for the leader itself, a follower of another leader, or a candidate', () => {
    const c = ledByA();
    c.forgetLeader('a', 'a');
    c.forgetLeader('b', 'c');
    expect([c.core('a').role, c.core('b').lead]).toEqual([RaftRole.Leader, 'a']);
    // b still holds a's lease and its whole election timeout: no campaign within electionTicks.
    expect(ticksToCampaign(c, 'b', 9)).toBe(Number.POSITIVE_INFINITY);
    expectClean(c);
  });

  it('a wrong word disrupts nothing: the replicas that hear the leader refuse the pre-vote', () => {
    const c = ledByA();
    const term = c.core('a').term;
    c.forgetLeader('b', 'a');
    ticksToCampaign(c, 'b', 5);
    expect(c.core('b').role).toBe(RaftRole.PreCandidate);
    c.stabilize();
    expect(c.leader()).toBe('a');
    // The leader's next heartbeat makes b its follower again, with a whole election timeout.
    c.tick('a');
    c.stabilize();
    expect([c.core('b').role, c.core('b').lead, c.core('b').term]).toEqual([RaftRole.Follower, 'a', term]);
    expect(ticksToCampaign(c, 'b', 9)).toBe(Number.POSITIVE_INFINITY);
    expect(c.core('a').term).toBe(term);
    expectClean(c);
  });

  it('a word the leader contradicts before the quick campaign leaves the whole timeout in place', () => {
    const c = ledByA();
    c.forgetLeader('b', 'a');
    c.tick('a');
    c.stabilize();
    expect(c.core('b').lead).toBe('a');
    expect(ticksToCampaign(c, 'b', 9)).toBe(Number.POSITIVE_INFINITY);
    expectClean(c);
  });

  it('a quick campaign that fails retries after a whole election timeout, not every few ticks', () => {
    const c = ledByA();
    c.crash('a');
    c.isolate('b');
    c.forgetLeader('b', 'a');
    ticksToCampaign(c, 'b', 5);
    c.stabilize();
    const term = c.core('b').term;
    expect(c.core('b').role).toBe(RaftRole.PreCandidate);
    // Its pre-vote went nowhere; the next attempt comes no sooner than electionTicks (10) later.
    const preVoteSent = () => c.inflight.some((item) => item.message.type === MessageType.PreVote);
    let ticks = 0;
    while (ticks < 30 && !preVoteSent()) {
      c.tick('b');
      ticks++;
    }
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect(ticks).toBeLessThan(30);
    expect(c.core('b').term).toBe(term);
  });
});

describe('RaftCore: Ready', () => {
  it('releases votes and append acknowledgements only in persistedMessages', () => {
    const storage = MemoryRaftStorage.bootstrap({ ...EMPTY_CONF_STATE, voters: ['a', 'b'] });
    const b = new RaftCore({ id: 'b', ...QUIET }, storage, fixedRandom);
    b.step(message(MessageType.Vote, 'a', 'b', 5, { index: 1, logTerm: 1 }));
    const rd = b.ready();
    expect(rd.messages).toEqual([]);
    expect(rd.persistedMessages.map((m) => [m.type, m.reject])).toEqual([[MessageType.VoteResp, false]]);
    expect(rd.hardState).toEqual({ term: 5, vote: 'a', commit: 1 });
    expect(rd.mustSync).toBe(true);
    expect(b.hasReady()).toBe(false); // outstanding until advance()
    storage.persist(rd);
    b.advance();
    b.step(
      message(MessageType.App, 'a', 'b', 5, {
        index: 1,
        logTerm: 1,
        commit: 1,
        entries: [{ term: 5, index: 2, type: 0, data: new Uint8Array() }],
      }),
    );
    const rd2 = b.ready();
    expect(rd2.entries.map((e) => e.index)).toEqual([2]);
    expect(rd2.persistedMessages.map((m) => [m.type, m.index])).toEqual([[MessageType.AppResp, 2]]);
  });

  it('batches proposals made between two Readys into one append per follower', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    const leader = c.core('a');
    for (let i = 0; i < 5; i++) leader.propose(new Uint8Array(0));
    const rd = leader.ready();
    const appends = rd.messages.filter((m) => m.type === MessageType.App);
    expect(appends.map((m) => m.to).sort()).toEqual(['b', 'c']);
    expect(appends.every((m) => m.entries.length === 5)).toBe(true);
    expect(rd.entries).toHaveLength(5);
  });

  it('pipelines appends to a follower in replicate state, within the inflight window', () => {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, maxSizePerMsg: 1, maxInflightMsgs: 3 });
    c.elect('a');
    c.stabilize();
    for (let i = 0; i < 10; i++) c.put('a', 1, i);
    c.flushSyncs();
    const toB = c.inflight.filter((f) => f.message.type === MessageType.App && f.message.to === 'b');
    expect(toB).toHaveLength(3);
    c.stabilize();
    expect(c.core('b').commitIndex).toBe(c.core('a').lastIndex);
    expectClean(c);
  });

  it('step() refuses messages addressed to another node or from itself', () => {
    const core = new RaftCore(
      { id: 'a' },
      MemoryRaftStorage.bootstrap({ ...EMPTY_CONF_STATE, voters: ['a'] }),
      fixedRandom,
    );
    expect(() => core.step(message(MessageType.App, 'b', 'c', 1))).toThrow(UnexpectedMessageError);
    expect(() => core.step(message(MessageType.App, 'a', 'a', 1))).toThrow(UnexpectedMessageError);
  });

  it('validates its configuration', () => {
    const storage = new MemoryRaftStorage();
    expect(
      () => new RaftCore({ id: 'a', electionTicks: 1, heartbeatTicks: 1 }, storage, fixedRandom),
    ).toThrow(RaftConfigError);
    expect(() => new RaftCore({ id: 'a', maxInflightMsgs: 0 }, storage, fixedRandom)).toThrow(
      RaftConfigError,
    );
    expect(() => new RaftCore({ id: '' }, storage, fixedRandom)).toThrow(RaftConfigError);
  });
});

function entry(term: number, index: number) {
  return { term, index, type: 0 as const, data: new Uint8Array() };
}

describe('RaftCore: pipelined storage writes (maxReadiesInFlight)', () => {
  const PIPELINED = { ...QUIET, maxReadiesInFlight: 3 };

  it('hands out the next Ready before the previous one is advanced, each entry once', () => {
    const storage = MemoryRaftStorage.bootstrap({ ...EMPTY_CONF_STATE, voters: ['a', 'b'] });
    const b = new RaftCore({ id: 'b', ...PIPELINED }, storage, fixedRandom);
    const append = (prev: number, entries: ReturnType<typeof entry>[], commit = 1) =>
      b.step(
        message(MessageType.App, 'a', 'b', 2, { index: prev, logTerm: prev === 1 ? 1 : 2, commit, entries }),
      );
    append(1, [entry(2, 2), entry(2, 3)]);
    const rd1 = b.ready();
    expect(rd1.entries.map((e) => e.index)).toEqual([2, 3]);
    expect(rd1.persistedMessages.map((m) => [m.type, m.index])).toEqual([[MessageType.AppResp, 3]]);
    append(3, [entry(2, 4)]);
    expect(b.hasReady()).toBe(true);
    const rd2 = b.ready();
    expect(rd2.entries.map((e) => e.index)).toEqual([4]);
    expect(rd2.persistedMessages.map((m) => [m.type, m.index])).toEqual([[MessageType.AppResp, 4]]);
    // A duplicate of what is in flight: nothing to write, but its acknowledgement still waits
    // for the Readys before it (the host completes Readys in order).
    append(1, [entry(2, 2)], 2);
    const rd3 = b.ready();
    expect(rd3.entries).toEqual([]);
    expect(rd3.mustSync).toBe(false);
    expect(rd3.persistedMessages.map((m) => m.type)).toEqual([MessageType.AppResp]);
    expect(b.hasReady()).toBe(false); // three in flight: the pipeline is full
    expect(() => b.ready()).toThrow(/maxReadiesInFlight 3/);
    for (const rd of [rd1, rd2, rd3]) {
      storage.persist(rd);
      b.advance();
    }
    expect(storage.lastIndex()).toBe(4);
    expect(b.lastIndex).toBe(4);
  });

  it('a leader counts its own entries toward commit only once they are durable', () => {
    const storage = MemoryRaftStorage.bootstrap({ ...EMPTY_CONF_STATE, voters: ['a'] });
    const a = new RaftCore({ id: 'a', ...PIPELINED }, storage, fixedRandom);
    a.campaign();
    const rd1 = a.ready(); // term, self-vote, no-op: nothing counts before it is durable
    expect(a.role).toBe(RaftRole.Candidate);
    storage.persist(rd1);
    a.advance();
    expect(a.role).toBe(RaftRole.Leader);
    const rd2 = a.ready(); // the no-op
    a.propose(new Uint8Array([1]));
    const rd3 = a.ready(); // the proposal, while the no-op syncs
    expect(rd3.entries.map((e) => e.index)).toEqual([3]);
    expect(a.commitIndex).toBe(1);
    storage.persist(rd2);
    a.advance();
    expect(a.commitIndex).toBe(2);
    storage.persist(rd3);
    a.advance();
    expect(a.commitIndex).toBe(3);
  });
});

describe('RaftCore: proposals', () => {
  it('drops proposals on a follower with the leader as a hint', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    const error = (() => {
      try {
        c.core('b').propose(new Uint8Array([1]));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ProposalDroppedError);
    expect((error as ProposalDroppedError).reason).toBe(DropReason.NotLeader);
    expect((error as ProposalDroppedError).leader).toBe('a');
  });

  it('drops proposals past the uncommitted bytes bound', () => {
    const c = cluster(['a', 'b', 'c'], { ...QUIET, maxUncommittedEntriesBytes: 64 });
    c.elect('a');
    c.stabilize();
    c.isolate('a');
    c.put('a', 1, 1, 30);
    c.put('a', 1, 2, 10);
    expect(() => c.put('a', 1, 3, 30)).toThrow(ProposalDroppedError);
    c.heal();
    c.tick('a');
    c.stabilize();
    expect(() => c.put('a', 1, 4, 30)).not.toThrow();
  });

  it('allows one membership change at a time', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.addNode('d');
    c.proposeConfChange('a', {
      transition: ConfChangeTransition.Auto,
      changes: [{ type: ConfChangeType.AddLearner, nodeId: 'd' }],
    });
    expect(() =>
      c.proposeConfChange('a', {
        transition: ConfChangeTransition.Auto,
        changes: [{ type: ConfChangeType.AddVoter, nodeId: 'd' }],
      }),
    ).toThrow(ProposalDroppedError);
    c.stabilize();
    c.proposeConfChange('a', {
      transition: ConfChangeTransition.Auto,
      changes: [{ type: ConfChangeType.AddVoter, nodeId: 'd' }],
    });
    c.stabilize();
    expect(c.core('a').confState().voters).toEqual(['a', 'b', 'c', 'd']);
    expectClean(c);
  });
});

describe('RaftCore: leadership transfer', () => {
  it('hands leadership to an up-to-date voter, refusing proposals meanwhile', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.transferLeader('a', 'c');
    expect(() => c.core('a').propose(new Uint8Array([1]))).toThrow(ProposalDroppedError);
    c.stabilize();
    expect(c.leader()).toBe('c');
    expectClean(c);
  });

  it('catches a lagging target up before handing over', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.cut('a', 'c');
    for (let i = 0; i < 5; i++) c.put('a', 1, i);
    c.stabilize();
    c.heal();
    c.transferLeader('a', 'c');
    for (let i = 0; i < 5; i++) {
      c.tick('a');
      c.stabilize();
    }
    expect(c.leader()).toBe('c');
    expect(c.core('c').commitIndex).toBeGreaterThanOrEqual(7);
    expectClean(c);
  });

  it('a follower forwards the request to the leader', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.transferLeader('b', 'b');
    c.stabilize();
    expect(c.leader()).toBe('b');
  });
});

describe('RaftCore: ReadIndex', () => {
  it('answers on the leader after a heartbeat quorum, and through a follower', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.put('a', 1, 5);
    c.stabilize();
    const onLeader = c.get('a', 1);
    const onFollower = c.get('c', 1);
    expect(c.result(onLeader)).toBeUndefined();
    c.stabilize();
    expect(c.result(onLeader)).toBe(5);
    expect(c.result(onFollower)).toBe(5);
    expect(c.checkHistory()).toBe(true);
  });

  it('a leader cut off from its quorum never answers', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.isolate('a');
    const read = c.get('a', 1);
    c.stabilize();
    c.tick('a', 3);
    c.stabilize();
    expect(c.result(read)).toBeUndefined();
  });

  it('a new leader answers only once an entry of its term is committed', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.campaign('b');
    c.flushSyncs();
    c.deliver((m) => m.type === MessageType.Vote || m.type === MessageType.VoteResp);
    c.flushSyncs();
    c.deliver((m) => m.type === MessageType.Vote || m.type === MessageType.VoteResp);
    c.flushSyncs();
    expect(c.core('b').role).toBe(RaftRole.Leader);
    c.drop((m) => m.type === MessageType.App);
    const read = c.get('b', 1);
    c.deliver((m) => m.type === MessageType.Heartbeat);
    c.deliver((m) => m.type === MessageType.HeartbeatResp);
    expect(c.result(read)).toBeUndefined();
    c.tick('b');
    c.stabilize();
    expect(c.result(read)).toBe(0);
  });
});

describe('RaftCore: snapshots', () => {
  it('streams a compacted log to a lagging follower in bounded chunks', () => {
    const c = new ScriptedCluster({
      voters: ['a', 'b', 'c'],
      raft: { ...QUIET, snapshotChunkBytes: 32, maxSnapshotChunksInflight: 2 },
      compactEvery: 5,
    });
    c.elect('a');
    c.stabilize();
    c.cut('a', 'c');
    for (let i = 0; i < 20; i++) c.put('a', i % 4, 100 + i, 24);
    c.stabilize();
    expect(c.node('a').durable.firstIndex()).toBeGreaterThan(3);
    c.heal();
    const chunks: Message[] = [];
    for (let round = 0; round < 200; round++) {
      c.tick('a');
      for (const f of c.inflight) if (f.message.type === MessageType.Snap) chunks.push(f.message);
      expect(c.inflight.filter((f) => f.message.type === MessageType.Snap).length).toBeLessThanOrEqual(2);
      c.flushSyncs();
      c.deliver();
      if (c.core('c').commitIndex === c.core('a').commitIndex) break;
    }
    c.stabilize();
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((m) => (m.snapshot?.data.byteLength ?? 0) <= 32)).toBe(true);
    expect(c.core('c').commitIndex).toBe(c.core('a').commitIndex);
    expect(c.stats.snapshotsInstalled).toBeGreaterThan(0);
    expect(c.node('c').kv.get(3)).toBe(c.node('a').kv.get(3));
    expectClean(c);
  });
});

describe('RaftCore: membership', () => {
  it('adds a learner that catches up, promotes it, and replaces a voter through joint consensus', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.put('a', 1, 1);
    c.stabilize();
    c.addNode('d');
    c.proposeConfChange('a', {
      transition: ConfChangeTransition.Auto,
      changes: [{ type: ConfChangeType.AddLearner, nodeId: 'd' }],
    });
    c.stabilize();
    c.tick('a');
    c.stabilize();
    expect(c.core('d').commitIndex).toBe(c.core('a').commitIndex);
    expect(c.node('d').kv.get(1)).toBe(1);
    c.proposeConfChange('a', {
      transition: ConfChangeTransition.Auto,
      changes: [
        { type: ConfChangeType.AddVoter, nodeId: 'd' },
        { type: ConfChangeType.RemoveNode, nodeId: 'b' },
      ],
    });
    c.stabilize();
    c.tick('a');
    c.stabilize();
    // Entered the joint config and left it automatically.
    const cs = c.core('a').confState();
    expect(cs.votersOutgoing).toEqual([]);
    expect(cs.voters).toEqual(['a', 'c', 'd']);
    expectClean(c);
  });

  it('a removed leader steps down', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.proposeConfChange('a', {
      transition: ConfChangeTransition.Auto,
      changes: [{ type: ConfChangeType.RemoveNode, nodeId: 'a' }],
    });
    c.stabilize();
    expect(c.core('a').role).toBe(RaftRole.Follower);
    for (let i = 0; i < 40 && c.leader() === undefined; i++) {
      c.tickAll();
      c.stabilize();
    }
    expect(['b', 'c']).toContain(c.leader());
    expectClean(c);
  });
});

describe('RaftCore: restart', () => {
  it('restarts from its storage alone and replays what it had committed', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    for (let i = 0; i < 5; i++) c.put('a', i, 10 + i);
    c.stabilize();
    c.crash('b');
    c.restart('b');
    c.stabilize();
    expect(c.node('b').kv.get(4)).toBe(14);
    c.tick('a');
    c.stabilize();
    expect(c.core('b').commitIndex).toBe(c.core('a').commitIndex);
    expectClean(c);
  });

  it('a crash before the fsync loses the unsynced entries but breaks no promise', () => {
    const c = cluster(['a', 'b', 'c']);
    c.elect('a');
    c.stabilize();
    c.holdSync('b');
    c.holdSync('c');
    c.put('a', 1, 7);
    c.stabilize();
    const last = c.core('a').lastIndex;
    expect(c.core('a').commitIndex).toBeLessThan(last);
    c.crash('b');
    c.releaseSync('b');
    c.restart('b');
    expect(c.node('b').durable.lastIndex()).toBeLessThan(last);
    c.releaseSync('c');
    c.stabilize();
    c.tick('a');
    c.stabilize();
    expect(c.core('a').commitIndex).toBe(last);
    expectClean(c);
  });
});
