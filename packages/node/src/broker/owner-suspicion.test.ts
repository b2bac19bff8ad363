import { describe, expect, it } from 'vitest';
import type { OwnerNodeView } from './owner-suspicion.ts';
import { ownerRun, ownerVerdict } from './owner-suspicion.ts';

const UP: OwnerNodeView = { forgotten: false, restarted: false, suspected: false, unreachableMs: 0 };

describe('ownerVerdict', () => {
  it('delivers to the owners of a node that answers', () => {
    expect(ownerVerdict(UP, 60_000)).toBe('deliver');
  });

  it('suspends those of a suspected node until the timeout, then gives them up', () => {
    const suspected = { ...UP, suspected: true };
    expect(ownerVerdict({ ...suspected, unreachableMs: 0 }, 60_000)).toBe('suspend');
    expect(ownerVerdict({ ...suspected, unreachableMs: 59_999 }, 60_000)).toBe('suspend');
    expect(ownerVerdict({ ...suspected, unreachableMs: 60_000 }, 60_000)).toBe('give-up');
    // A timeout of 0: given up as soon as the node is suspected (the behaviour before suspicion).
    expect(ownerVerdict(suspected, 0)).toBe('give-up');
  });

  it('gives up at once the owners of a node known gone, reachable or not', () => {
    expect(ownerVerdict({ ...UP, restarted: true }, 60_000)).toBe('give-up');
    expect(ownerVerdict({ ...UP, forgotten: true }, 60_000)).toBe('give-up');
    expect(ownerVerdict({ ...UP, restarted: true, suspected: true }, 60_000)).toBe('give-up');
  });
});

describe('ownerRun', () => {
  it.each([
    ['styx-1:AbC-_9.3/7', 'AbC-_9'],
    ['host:5672:AbCd.1/1', 'AbCd'],
    ['node.example.com:run.4/2', 'run'],
    ['rack/1:r1.4/2', 'r1'],
    ['styx-2:run.9', 'run'],
  ])('%s → %s', (owner, run) => {
    expect(ownerRun(owner)).toBe(run);
  });

  it('is undefined for an id without a run', () => {
    expect(ownerRun('conn-1/1')).toBeUndefined();
    expect(ownerRun('plain')).toBeUndefined();
    expect(ownerRun('n:.1/1')).toBeUndefined();
  });
});
