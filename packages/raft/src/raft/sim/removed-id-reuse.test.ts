import { describe, expect, it } from 'vitest';
import { ConfChangeTransition, ConfChangeType } from '../conf-change.ts';
import type { RaftConfig } from '../types.ts';
import { ScriptedCluster } from './scripted-cluster.ts';

const RAFT: Omit<RaftConfig, 'id' | 'applied'> = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
};

/**
 * A replica removed from its group, its data destroyed, and added back under the same id (what a
 * Styx queue did on delete_member then add_member of the same node: chaos seed 214, 1,617 confirmed
 * messages lost). `NodeId` is never to come back without its state; these scripts show why, and
 * when destroying the data is safe after all: once every remaining member holds the removal
 * (ClusterQueues keeps a removed replica's data until its leader reports that).
 */
describe('a removed replica brought back empty under the same id', () => {
  /**
   * {a, b, c}, b leads; a goes down; key 2 commits on b and c; b removes c (committed on b and c).
   * Then `beforeDestroy`, c's data goes, b goes down, and c comes back empty.
   */
  function script(beforeDestroy: (c: ScriptedCluster) => void): ScriptedCluster {
    const c = new ScriptedCluster({ voters: ['a', 'b', 'c'], raft: RAFT });
    c.elect('b');
    c.stabilize();
    c.put('b', 1, 10);
    c.stabilize();
    c.crash('a');
    const put = c.put('b', 2, 20);
    c.stabilize();
    expect(c.done(put)).toBe(true);
    c.proposeConfChange('b', {
      transition: ConfChangeTransition.Auto,
      changes: [{ type: ConfChangeType.RemoveNode, nodeId: 'c' }],
    });
    c.stabilize();
    beforeDestroy(c);
    c.crash('c');
    c.crash('b');
    c.addNode('c'); // its data destroyed; added back, it starts empty
    if (!c.node('a').up) c.restart('a');
    c.tickAll(30);
    c.stabilize();
    c.restart('b');
    for (let i = 0; i < 40; i++) {
      c.tickAll(1);
      c.stabilize();
    }
    return c;
  }

  /** The checker's findings, less those about c's state going back (the reuse itself, by design). */
  function findings(c: ScriptedCluster): string[] {
    return c.violations.filter((v) => !/^c: durable \w+ went back/.test(v));
  }

  it('while a member lacks the removal: that member counts c a voter, wins with its vote, and a committed entry is gone', () => {
    const c = script(() => {});
    expect(findings(c).join('; ')).toMatch(/leader completeness: a leads term \d+ without committed entry/);
    expect(findings(c).join('; ')).toMatch(/state machine safety/);
  });

  it('once every remaining member holds the removal: nothing lost', () => {
    const c = script((cluster) => {
      cluster.restart('a');
      cluster.tickAll(5);
      cluster.stabilize();
    });
    const leader = c.leader();
    expect(leader).toBeDefined();
    const read = c.get(leader as string, 2);
    c.stabilize();
    expect(c.result(read)).toBe(20);
    expect(findings(c)).toEqual([]);
    expect(c.checkHistory()).toBe(true);
  });
});
