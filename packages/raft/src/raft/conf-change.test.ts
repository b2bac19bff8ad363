import { describe, expect, it } from 'vitest';
import type { ConfChangeV2, MembershipConfig } from './conf-change.ts';
import {
  applyChange,
  ConfChangeTransition,
  ConfChangeType,
  decodeConfChange,
  encodeConfChange,
  fromConfState,
  isJoint,
  LEAVE_JOINT,
  simple,
  toConfState,
} from './conf-change.ts';
import { ConfChangeError, RaftDecodeError } from './errors.ts';

const base: MembershipConfig = fromConfState({
  voters: ['a', 'b', 'c'],
  votersOutgoing: [],
  learners: [],
  learnersNext: [],
  autoLeave: false,
});

function cc(transition: ConfChangeV2['transition'], ...changes: [number, string][]): ConfChangeV2 {
  return {
    transition,
    changes: changes.map(([type, nodeId]) => ({
      type: type as ConfChangeV2['changes'][number]['type'],
      nodeId,
    })),
    context: 'x',
  };
}

describe('membership changes', () => {
  it('adds and removes one voter at a time without joint consensus', () => {
    const added = applyChange(base, cc(ConfChangeTransition.Auto, [ConfChangeType.AddVoter, 'd']));
    expect(added.voters.incoming).toEqual(['a', 'b', 'c', 'd']);
    expect(isJoint(added)).toBe(false);
    const removed = applyChange(added, cc(ConfChangeTransition.Auto, [ConfChangeType.RemoveNode, 'a']));
    expect(removed.voters.incoming).toEqual(['b', 'c', 'd']);
  });

  it('adds a learner, then promotes it', () => {
    const learner = applyChange(base, cc(ConfChangeTransition.Auto, [ConfChangeType.AddLearner, 'd']));
    expect(learner.learners).toEqual(['d']);
    const promoted = applyChange(learner, cc(ConfChangeTransition.Auto, [ConfChangeType.AddVoter, 'd']));
    expect(promoted.learners).toEqual([]);
    expect(promoted.voters.incoming).toContain('d');
  });

  it('refuses a simple change of more than one voter, and leaving a config that is not joint', () => {
    const two = [
      { type: ConfChangeType.AddVoter, nodeId: 'd' },
      { type: ConfChangeType.AddVoter, nodeId: 'e' },
    ];
    expect(() => simple(base, two)).toThrow(ConfChangeError);
    // With the Auto transition, two changes go through joint consensus instead.
    expect(
      isJoint(applyChange(base, { transition: ConfChangeTransition.Auto, changes: two, context: '' })),
    ).toBe(true);
    expect(() => applyChange(base, LEAVE_JOINT)).toThrow(ConfChangeError);
  });

  it('replaces a voter through joint consensus and leaves it', () => {
    const joint = applyChange(
      base,
      cc(ConfChangeTransition.Auto, [ConfChangeType.AddVoter, 'd'], [ConfChangeType.RemoveNode, 'a']),
    );
    expect(isJoint(joint)).toBe(true);
    expect(joint.autoLeave).toBe(true);
    expect(joint.voters.incoming).toEqual(['b', 'c', 'd']);
    expect(joint.voters.outgoing).toEqual(['a', 'b', 'c']);
    expect(() => applyChange(joint, cc(ConfChangeTransition.Auto, [ConfChangeType.AddVoter, 'e']))).toThrow(
      ConfChangeError,
    );
    const left = applyChange(joint, LEAVE_JOINT);
    expect(isJoint(left)).toBe(false);
    expect(left.voters.incoming).toEqual(['b', 'c', 'd']);
  });

  it('demotes a voter to learner only when the joint config is left (learnersNext)', () => {
    const joint = applyChange(base, cc(ConfChangeTransition.JointExplicit, [ConfChangeType.AddLearner, 'a']));
    expect(joint.autoLeave).toBe(false);
    expect(joint.learnersNext).toEqual(['a']);
    expect(joint.learners).toEqual([]);
    expect(joint.voters.outgoing).toContain('a');
    const left = applyChange(joint, LEAVE_JOINT);
    expect(left.learners).toEqual(['a']);
    expect(left.learnersNext).toEqual([]);
    expect(left.voters.incoming).toEqual(['b', 'c']);
  });

  it('never removes every voter', () => {
    const single = fromConfState({ ...toConfState(base), voters: ['a'] });
    expect(() =>
      applyChange(single, cc(ConfChangeTransition.Auto, [ConfChangeType.RemoveNode, 'a'])),
    ).toThrow(ConfChangeError);
  });

  it('round-trips ConfState and rejects an inconsistent one', () => {
    expect(fromConfState(toConfState(base))).toEqual(base);
    expect(() =>
      fromConfState({
        voters: ['a'],
        votersOutgoing: [],
        learners: ['a'],
        learnersNext: [],
        autoLeave: false,
      }),
    ).toThrow(ConfChangeError);
  });

  it('encodes and decodes changes, refusing garbage', () => {
    const change = cc(
      ConfChangeTransition.JointImplicit,
      [ConfChangeType.AddVoter, 'n7'],
      [ConfChangeType.RemoveNode, 'n1'],
    );
    expect(decodeConfChange(encodeConfChange(change))).toEqual(change);
    expect(decodeConfChange(encodeConfChange(LEAVE_JOINT))).toEqual(LEAVE_JOINT);
    expect(() => decodeConfChange(new Uint8Array([9]))).toThrow(RaftDecodeError);
    expect(() => decodeConfChange(new Uint8Array([0, 1, 7, 1, 97, 0]))).toThrow(RaftDecodeError);
  });
});
