/**
 * Which queues have replicas: a durable, shared queue is a Raft group of its own (one replica per
 * member node, on the node's LMDB log). A non-durable or exclusive queue lives in memory on the
 * node of its connection: it has no group, no term, no replicas to compare, so the operator verbs
 * about replicas (`quorum_status`, `check_queue`) refuse it rather than report something made up.
 */
import { ChannelError, Code } from '../errors/amqp-error.ts';
import type { QueueRecord } from '../metadata/types.ts';

export function isReplicatedQueue(record: QueueRecord): boolean {
  return record.durable && record.exclusiveOwner === undefined;
}

/** The refusal for a replica question about a queue without replicas (406: the API's 400). */
export function notReplicatedError(record: QueueRecord): ChannelError {
  const why =
    record.exclusiveOwner !== undefined
      ? 'it is exclusive, so it lives in memory on the node of its connection'
      : 'it is not durable, so it lives in memory on one node';
  return new ChannelError(
    Code.PRECONDITION_FAILED,
    `queue '${record.name}' in vhost '${record.vhost}' is not replicated: ${why}`,
  );
}
