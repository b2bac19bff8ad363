import { describe, expect, it } from 'vitest';
import type { MemberLoad } from '../cluster/placement.ts';
import { placeReplicas, queueKey } from '../cluster/placement.ts';
import { PlacementLoad } from './placement-load.ts';

describe('PlacementLoad', () => {
  it('counts at most once per max age, and adds the placements made since', () => {
    let counts = 0;
    const load = new PlacementLoad(() => {
      counts++;
      return new Map<string, MemberLoad>([['a', { replicas: 5, leaders: 2 }]]);
    }, 1_000);
    expect(load.current(0).get('a')).toEqual({ replicas: 5, leaders: 2 });
    load.placed(['a', 'b'], 'a');
    expect(load.current(999).get('a')).toEqual({ replicas: 6, leaders: 3 });
    expect(load.current(999).get('b')).toEqual({ replicas: 1, leaders: 0 });
    expect(counts).toBe(1);
    // Counted again: what the whole cluster holds now (leaders moved elsewhere meanwhile).
    expect(load.current(1_000).get('a')).toEqual({ replicas: 5, leaders: 2 });
    expect(counts).toBe(2);
  });

  it('places a burst of declares between two counts as placing against the whole assignment does', () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
    const load = new PlacementLoad(() => new Map(), 60_000);
    const assignment = new Map<string, { replicas: readonly string[]; leader: string }>();
    for (let i = 0; i < 200; i++) {
      const queue = { vhost: '/', name: `q${i}` };
      const size = 1 + (i % 5);
      const counted = placeReplicas({ queue, members, assignment, size });
      const kept = placeReplicas({ queue, members, load: load.current(0), size });
      expect(kept).toEqual(counted);
      load.placed(kept.replicas, kept.leader);
      assignment.set(queueKey(queue), { replicas: kept.replicas, leader: kept.leader });
    }
  });
});
