// The metadata store: its state machine, permission checks, password hashing, queue arguments.

export { metadataCommandCodec } from './command-codec.ts';
export {
  bootstrapCommands,
  MetadataMachine,
  SnapshotFormatError,
  STANDARD_EXCHANGES,
} from './metadata-machine.ts';
export { MAX_NAME_BYTES } from './names.ts';
export { hashPassword, verifyPassword } from './passwords.ts';
export { canAccess, canUseVhost } from './permissions.ts';
export type { ArgumentError, QueueArgumentsResult } from './queue-arguments.ts';
export {
  MAX_EXPIRY_MS,
  QUEUE_EQUIVALENCE_KEYS,
  queueConfigFromArguments,
  validateExpiration,
} from './queue-arguments.ts';
export { checkExclusiveAccess } from './replies.ts';
export type * from './types.ts';
export { EXCHANGE_TYPES } from './types.ts';
