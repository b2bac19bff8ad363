import { ConfChangeError, RaftDecodeError } from './errors.ts';
import type { JointConfig } from './quorum.ts';
import type { ConfState, NodeId } from './types.ts';
import { WireReader, WireWriter } from './wire-buffer.ts';

/**
 * Membership changes (etcd's confchange package, rewritten): pure functions from a configuration
 * and a change to the next configuration, with the rules that keep every transition safe:
 * - a simple change alters at most one voter (any two majorities of consecutive configs overlap);
 * - anything larger goes through joint consensus: enter (incoming = changed, outgoing = old, both
 *   majorities needed), then leave (outgoing dropped);
 * - a voter demoted to learner while joint stays a voter of the outgoing half until the leave
 *   (`learnersNext`), so it is never a voter and a learner at once.
 * A change takes effect when it is APPLIED (the host calls `RaftCore.applyConfChange`), not when
 * appended, and the leader lets only one be pending at a time.
 */

export const ConfChangeType = {
  AddVoter: 0,
  /** Add a new node as a learner (receives the log, never votes), or demote a voter. */
  AddLearner: 1,
  RemoveNode: 2,
} as const;
export type ConfChangeType = (typeof ConfChangeType)[keyof typeof ConfChangeType];

export const ConfChangeTransition = {
  /** Simple when possible (one voter changes), else joint with automatic leave. */
  Auto: 0,
  /** Always joint, left automatically once applied. */
  JointImplicit: 1,
  /** Always joint, left only by an explicit empty change. */
  JointExplicit: 2,
} as const;
export type ConfChangeTransition = (typeof ConfChangeTransition)[keyof typeof ConfChangeTransition];

export interface ConfChangeSingle {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
}

/**
 * A membership change. No changes and the Auto transition means "leave the joint configuration".
 * `context` is opaque to Raft (the host's request id).
 */
export interface ConfChangeV2 {
  readonly transition: ConfChangeTransition;
  readonly changes: readonly ConfChangeSingle[];
  readonly context: string;
}

/** A configuration as the core tracks it: sorted, duplicate-free id lists. */
export interface MembershipConfig {
  readonly voters: JointConfig;
  readonly learners: readonly NodeId[];
  readonly learnersNext: readonly NodeId[];
  readonly autoLeave: boolean;
}

export const EMPTY_MEMBERSHIP: MembershipConfig = Object.freeze({
  voters: Object.freeze({ incoming: [], outgoing: [] }),
  learners: [],
  learnersNext: [],
  autoLeave: false,
});

/** The change that leaves a joint configuration. */
export const LEAVE_JOINT: ConfChangeV2 = Object.freeze({
  transition: ConfChangeTransition.Auto,
  changes: Object.freeze([]) as readonly ConfChangeSingle[],
  context: '',
});

export function isLeaveJoint(cc: ConfChangeV2): boolean {
  return cc.changes.length === 0 && cc.transition === ConfChangeTransition.Auto;
}

/** Whether `cc` enters a joint configuration, and whether it will be left automatically. */
export function entersJoint(cc: ConfChangeV2): { readonly joint: boolean; readonly autoLeave: boolean } {
  const joint = cc.transition !== ConfChangeTransition.Auto || cc.changes.length > 1;
  return { joint, autoLeave: joint && cc.transition !== ConfChangeTransition.JointExplicit };
}

export function isJoint(config: MembershipConfig): boolean {
  return config.voters.outgoing.length > 0;
}

/** Every id the config knows (voters of both halves and learners), sorted. */
export function memberIds(config: MembershipConfig): NodeId[] {
  const ids = new Set<NodeId>([...config.voters.incoming, ...config.voters.outgoing, ...config.learners]);
  return [...ids].sort();
}

/** Whether `id` is a voter in either half. */
export function isVoter(config: MembershipConfig, id: NodeId): boolean {
  return config.voters.incoming.includes(id) || config.voters.outgoing.includes(id);
}

export function toConfState(config: MembershipConfig): ConfState {
  return {
    voters: config.voters.incoming,
    votersOutgoing: config.voters.outgoing,
    learners: config.learners,
    learnersNext: config.learnersNext,
    autoLeave: config.autoLeave,
  };
}

/** The configuration a snapshot's ConfState describes; throws `ConfChangeError` if inconsistent. */
export function fromConfState(state: ConfState): MembershipConfig {
  const config: MembershipConfig = {
    voters: { incoming: sorted(state.voters), outgoing: sorted(state.votersOutgoing) },
    learners: sorted(state.learners),
    learnersNext: sorted(state.learnersNext),
    autoLeave: state.autoLeave,
  };
  checkInvariants(config);
  return config;
}

/** Apply a change to `config`, returning the next configuration. Throws `ConfChangeError`. */
export function applyChange(config: MembershipConfig, cc: ConfChangeV2): MembershipConfig {
  if (isLeaveJoint(cc)) return leaveJoint(config);
  const { joint, autoLeave } = entersJoint(cc);
  return joint ? enterJoint(config, autoLeave, cc.changes) : simple(config, cc.changes);
}

/** Enter joint consensus: outgoing = the current voters, incoming = them with `changes` applied. */
export function enterJoint(
  config: MembershipConfig,
  autoLeave: boolean,
  changes: readonly ConfChangeSingle[],
): MembershipConfig {
  if (isJoint(config)) throw new ConfChangeError('the configuration is already joint');
  if (config.voters.incoming.length === 0) {
    throw new ConfChangeError('cannot make a zero-voter configuration joint');
  }
  const draft = Draft.of(config);
  draft.outgoing = new Set(config.voters.incoming);
  draft.apply(changes);
  draft.autoLeave = autoLeave;
  return draft.finish();
}

/** Leave joint consensus: drop the outgoing half; demoted voters become learners. */
export function leaveJoint(config: MembershipConfig): MembershipConfig {
  if (!isJoint(config)) throw new ConfChangeError('cannot leave a configuration that is not joint');
  const draft = Draft.of(config);
  for (const id of draft.learnersNext) draft.learners.add(id);
  draft.learnersNext.clear();
  draft.outgoing.clear();
  draft.autoLeave = false;
  return draft.finish();
}

/** A change of at most one voter, outside joint consensus. */
export function simple(config: MembershipConfig, changes: readonly ConfChangeSingle[]): MembershipConfig {
  if (isJoint(config)) throw new ConfChangeError('cannot apply a simple change to a joint configuration');
  const draft = Draft.of(config);
  draft.apply(changes);
  const before = new Set(config.voters.incoming);
  let changed = 0;
  for (const id of draft.incoming) if (!before.has(id)) changed++;
  for (const id of before) if (!draft.incoming.has(id)) changed++;
  if (changed > 1) {
    throw new ConfChangeError('more than one voter changed without entering a joint configuration');
  }
  return draft.finish();
}

/** Mutable working copy of a config while a change is applied. */
class Draft {
  incoming: Set<NodeId>;
  outgoing: Set<NodeId>;
  learners: Set<NodeId>;
  learnersNext: Set<NodeId>;
  autoLeave: boolean;

  private constructor(config: MembershipConfig) {
    this.incoming = new Set(config.voters.incoming);
    this.outgoing = new Set(config.voters.outgoing);
    this.learners = new Set(config.learners);
    this.learnersNext = new Set(config.learnersNext);
    this.autoLeave = config.autoLeave;
  }

  static of(config: MembershipConfig): Draft {
    return new Draft(config);
  }

  apply(changes: readonly ConfChangeSingle[]): void {
    for (const change of changes) {
      if (change.nodeId === '') continue;
      switch (change.type) {
        case ConfChangeType.AddVoter:
          this.learners.delete(change.nodeId);
          this.learnersNext.delete(change.nodeId);
          this.incoming.add(change.nodeId);
          break;
        case ConfChangeType.AddLearner:
          this.#makeLearner(change.nodeId);
          break;
        case ConfChangeType.RemoveNode:
          this.incoming.delete(change.nodeId);
          this.learners.delete(change.nodeId);
          this.learnersNext.delete(change.nodeId);
          break;
        default:
          throw new ConfChangeError(`unknown change type ${String((change as ConfChangeSingle).type)}`);
      }
    }
    if (this.incoming.size === 0) throw new ConfChangeError('the change removes every voter');
  }

  #makeLearner(id: NodeId): void {
    if (this.learners.has(id)) return;
    this.incoming.delete(id);
    this.learnersNext.delete(id);
    // A voter of the outgoing half cannot be a learner yet: it becomes one when the joint config
    // is left. Anyone else is a learner at once.
    if (this.outgoing.has(id)) this.learnersNext.add(id);
    else this.learners.add(id);
  }

  finish(): MembershipConfig {
    const config: MembershipConfig = {
      voters: { incoming: sorted(this.incoming), outgoing: sorted(this.outgoing) },
      learners: sorted(this.learners),
      learnersNext: sorted(this.learnersNext),
      autoLeave: this.autoLeave,
    };
    checkInvariants(config);
    return config;
  }
}

function sorted(ids: Iterable<NodeId>): NodeId[] {
  return [...new Set(ids)].sort();
}

function checkInvariants(config: MembershipConfig): void {
  const { incoming, outgoing } = config.voters;
  for (const id of config.learners) {
    if (incoming.includes(id) || outgoing.includes(id)) {
      throw new ConfChangeError(`${id} is both a voter and a learner`);
    }
  }
  for (const id of config.learnersNext) {
    if (!outgoing.includes(id))
      throw new ConfChangeError(`${id} is in learnersNext but not an outgoing voter`);
    if (config.learners.includes(id)) throw new ConfChangeError(`${id} is in learnersNext and a learner`);
    if (incoming.includes(id)) throw new ConfChangeError(`${id} is in learnersNext and an incoming voter`);
  }
  if (outgoing.length === 0) {
    if (config.learnersNext.length > 0) throw new ConfChangeError('learnersNext outside a joint config');
    if (config.autoLeave) throw new ConfChangeError('autoLeave outside a joint config');
  }
}

/** Encode a change for a ConfChange log entry. */
export function encodeConfChange(cc: ConfChangeV2): Uint8Array {
  const writer = new WireWriter(16 + cc.changes.length * 8 + cc.context.length);
  writer.u8(cc.transition);
  writer.varint(cc.changes.length);
  for (const change of cc.changes) {
    writer.u8(change.type);
    writer.string(change.nodeId);
  }
  writer.string(cc.context);
  return writer.finish();
}

/** Decode a ConfChange entry's data; throws `RaftDecodeError` on malformed bytes. */
export function decodeConfChange(bytes: Uint8Array): ConfChangeV2 {
  const reader = new WireReader(bytes);
  const transition = reader.u8();
  if (transition > ConfChangeTransition.JointExplicit)
    throw new RaftDecodeError(`bad transition ${transition}`);
  const count = reader.varint();
  if (count > bytes.length) throw new RaftDecodeError(`bad change count ${count}`);
  const changes: ConfChangeSingle[] = [];
  for (let i = 0; i < count; i++) {
    const type = reader.u8();
    if (type > ConfChangeType.RemoveNode) throw new RaftDecodeError(`bad change type ${type}`);
    changes.push({ type: type as ConfChangeType, nodeId: reader.string() });
  }
  const context = reader.string();
  reader.end();
  return { transition: transition as ConfChangeTransition, changes, context };
}
