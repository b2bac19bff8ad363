/** The node's durable storage: one LMDB environment for the log store, bodies and node identity. */
export { decodeBasicProperties, encodeBasicProperties } from './basic-properties-codec.ts';
export type { CompactionOptions, CompactionPolicy } from './compaction-policy.ts';
export {
  CompactionTracker,
  DEFAULT_COMPACTION_POLICY,
  ENTRY_OVERHEAD_BYTES,
  queueCommandWeight,
  withCompaction,
} from './compaction-policy.ts';
export type { DurableQueueLogOptions } from './durable-queue-log.ts';
export { durableQueueLog } from './durable-queue-log.ts';
export {
  BodyStoreFailedError,
  StorageClosedError,
  StorageError,
  StorageFormatError,
  StorageMetaCorruptedError,
  StoredBytesCorruptedError,
} from './errors.ts';
export type { LmdbBodyStoreOptions } from './lmdb-body-store.ts';
export { DELETE_CHUNK_KEYS, LmdbBodyStore } from './lmdb-body-store.ts';
export { jsonCommandCodec, NotPlainDataError } from './metadata-command-codec.ts';
export type { NodeStorage } from './node-storage.ts';
export { openNodeStorage, STORAGE_FORMAT_VERSION } from './node-storage.ts';
export { QUEUE_COMMAND_TAGS, queueCommandCodec } from './queue-command-codec.ts';
export type { StorageLogger } from './storage-logger.ts';
export { decodeStoredMessage, encodeStoredMessage } from './stored-message-codec.ts';
