/**
 * Keys of the body store: [u16 BE byte length of groupId][groupId UTF-8][u64 BE message id], the
 * layout of the log store's keys (`@styx/raft`'s group keys), so one group's bodies are one
 * contiguous range ordered by id and deleting a group is deleting a range. Message ids are the
 * group's log indexes, below 2^53.
 */
export {
  END_OF_GROUP,
  GroupPrefixCache,
  groupIdKey as groupIdBytes,
  groupPrefix,
  indexKey as bodyKey,
  readIndex as readBodyId,
} from '@styx/raft';
