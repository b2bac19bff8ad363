/**
 * The pure Raft core (etcd-raft's shape, rewritten in TypeScript): `RaftCore` and what it needs.
 * Test-only pieces (mutations, the simulator) are deliberately not exported from here.
 */
export type {
  ConfChangeSingle,
  ConfChangeV2,
  MembershipConfig,
} from './conf-change.ts';
export {
  applyChange,
  ConfChangeTransition,
  ConfChangeType,
  decodeConfChange,
  encodeConfChange,
  fromConfState,
  isJoint,
  LEAVE_JOINT,
  memberIds,
  toConfState,
} from './conf-change.ts';
export {
  ConfChangeError,
  DropReason,
  ProposalDroppedError,
  RaftConfigError,
  RaftDecodeError,
  RaftError,
  RaftInvariantError,
  UnexpectedMessageError,
} from './errors.ts';
export { MemoryRaftStorage } from './memory-raft-storage.ts';
export { decodeMessage, encodeMessage } from './message-codec.ts';
export { ProgressState } from './progress.ts';
export type { ProgressStatus, RaftStatus } from './raft-core.ts';
export { RaftCore } from './raft-core.ts';
export type {
  ConfState,
  Entry,
  HardState,
  Message,
  NodeId,
  RaftConfig,
  RaftRandom,
  RaftStorage,
  ReadState,
  Ready,
  Snapshot,
  SnapshotChunk,
  SnapshotMeta,
  SoftState,
} from './types.ts';
export {
  CAMPAIGN_TRANSFER,
  EMPTY_CONF_STATE,
  EntryType,
  MESSAGE_TYPE_NAMES,
  MessageType,
  message,
  RAFT_DEFAULTS,
  RaftRole,
} from './types.ts';
