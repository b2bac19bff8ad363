// The metadata store: its state machine, permission checks, password hashing, queue arguments,
// policies and the effective queue configuration they give.

export { metadataCommandCodec } from './command-codec.ts';
export type { EffectiveQueueConfig } from './effective-config.ts';
export { effectiveQueueConfig, StoredQueueArgumentsError, sameQueueConfig } from './effective-config.ts';
export {
  bootstrapCommands,
  MetadataMachine,
  SnapshotFormatError,
  STANDARD_EXCHANGES,
} from './metadata-machine.ts';
export { MAX_NAME_BYTES } from './names.ts';
export { hashPassword, verifyPassword } from './passwords.ts';
export { canAccess, canUseVhost } from './permissions.ts';
export { POLICY_KEYS, validatePolicyDefinition } from './policy-definition.ts';
export { policyMatches, selectPolicy } from './policy-match.ts';
export type { ArgumentError, QueueArgumentsResult } from './queue-arguments.ts';
export {
  MAX_EXPIRY_MS,
  QUEUE_EQUIVALENCE_KEYS,
  queueConfigFromArguments,
  validateExpiration,
} from './queue-arguments.ts';
export { checkExclusiveAccess } from './replies.ts';
export type * from './types.ts';
export { EXCHANGE_TYPES, POLICY_APPLY_TO } from './types.ts';
