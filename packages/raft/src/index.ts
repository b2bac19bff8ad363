export type { Clock } from './clock.ts';
export { ManualClock, systemClock } from './clock.ts';
export {
  LogClosedError,
  LogCorruptedError,
  LogFailedError,
  LogNotOpenError,
  LogStoreClosedError,
  LogStoreFailedError,
  NotLeaderError,
  ReplicatedLogError,
} from './errors.ts';
export {
  AdmissionQueueFullError,
  BarrierTimeoutError,
  GroupAlreadyOpenError,
  GroupOverloadedError,
  MembershipChangeError,
  PeerUnreachableError,
} from './group/errors.ts';
export type { BatchFilter } from './group/in-process-transport.ts';
export { InProcessHub, InProcessTransport } from './group/in-process-transport.ts';
export { decodePeerBatch, encodePeerBatch } from './group/peer-batch-codec.ts';
export type { MemberProgress, MembershipChange, RaftGroupLogOptions } from './group/raft-group-log.ts';
export { RaftGroupLog } from './group/raft-group-log.ts';
export type { RaftHostOptions, RaftHostStats, RaftTuning } from './group/raft-host.ts';
export { DEFAULT_MAX_BYTES_IN_FLIGHT, DEFAULT_TICK_MS, RaftHost } from './group/raft-host.ts';
export type { GroupMessage, PeerBatch, QuiesceNotice, Transport } from './group/transport.ts';
export type { InMemoryLogOptions } from './in-memory-log.ts';
export { InMemoryLog } from './in-memory-log.ts';
export {
  END_OF_GROUP,
  GroupPrefixCache,
  groupIdKey,
  groupPrefix,
  indexKey,
  readIndex,
} from './lmdb/group-keys.ts';
export type { LmdbLogStorageOptions } from './lmdb/lmdb-log-storage.ts';
export { LmdbLogStorage, MAX_GROUP_ID_BYTES } from './lmdb/lmdb-log-storage.ts';
export { logStoreOnEnvironment, openLogStore } from './lmdb/log-store.ts';
export { RaftDecodeError } from './raft/errors.ts';
export type { ConfState, NodeId } from './raft/types.ts';
export type {
  CommandCodec,
  EntryMeta,
  ReplicatedLog,
  ReplicatedLogFactory,
  Role,
  RoleChange,
  StateMachine,
} from './replicated-log.ts';
export type { SingleVoterLogOptions } from './single-voter-log.ts';
export { SingleVoterLog, SingleVoterLogFactory } from './single-voter-log.ts';
export { LatencyHistogram, SYNC_LATENCY_BOUNDS } from './storage/latency-histogram.ts';
export type {
  AttachedWrite,
  HardState,
  LogStorage,
  LogWrite,
  StoredEntry,
  StoredSnapshot,
} from './storage/log-storage.ts';
export type { LogStoreOptions } from './storage/log-store.ts';
export { DEFAULT_MAX_BATCHES_IN_FLIGHT, LogStore } from './storage/log-store.ts';
export type { ManualSyncLogStorageOptions } from './storage/manual-sync-log-storage.ts';
export { ManualSyncLogStorage } from './storage/manual-sync-log-storage.ts';
export { MemoryLogStorage } from './storage/memory-log-storage.ts';
