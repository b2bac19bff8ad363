/**
 * Reply builders for the metadata machine, with RabbitMQ's wording so clients and operators see
 * the messages they know ("no exchange 'x' in vhost '/'", "inequivalent arg ...").
 */
import { ReplyCode } from '@styx/client/wire';
import type { ExchangeRecord, MetadataError, MetadataOk, QueueRecord } from './types.ts';

const NO_QUEUES: readonly QueueRecord[] = Object.freeze([]);
const NO_EXCHANGES: readonly ExchangeRecord[] = Object.freeze([]);

/** An ok reply; unspecified fields are false / undefined / empty (shared frozen arrays). */
export function ok(fields: Partial<Omit<MetadataOk, 'type'>> = {}): MetadataOk {
  return {
    type: 'ok',
    created: fields.created ?? false,
    removed: fields.removed ?? false,
    exchange: fields.exchange,
    queue: fields.queue,
    deletedQueues: fields.deletedQueues ?? NO_QUEUES,
    deletedExchanges: fields.deletedExchanges ?? NO_EXCHANGES,
  };
}

export function error(code: number, text: string): MetadataError {
  return { type: 'error', code, text };
}

/** RabbitMQ's `rabbit_misc:rs/1`: "queue 'q' in vhost '/'". */
export function resourceText(kind: 'exchange' | 'queue', vhost: string, name: string): string {
  return `${kind} '${name}' in vhost '${vhost}'`;
}

export function noSuchVhost(vhost: string): MetadataError {
  return error(ReplyCode.NOT_FOUND, `no vhost '${vhost}'`);
}

export function noSuchUser(user: string): MetadataError {
  return error(ReplyCode.NOT_FOUND, `no user '${user}'`);
}

export function noSuchResource(kind: 'exchange' | 'queue', vhost: string, name: string): MetadataError {
  return error(ReplyCode.NOT_FOUND, `no ${resourceText(kind, vhost, name)}`);
}

/** Declaring, deleting or binding to/from the default exchange ''. */
export function defaultExchangeRefused(): MetadataError {
  return error(ReplyCode.ACCESS_REFUSED, 'operation not permitted on the default exchange');
}

/** 405 for a queue that is exclusive to another connection (or exclusivity that does not match). */
export function exclusiveLocked(vhost: string, name: string): MetadataError {
  return error(
    ReplyCode.RESOURCE_LOCKED,
    `cannot obtain exclusive access to locked ${resourceText('queue', vhost, name)}. It could be ` +
      'originally declared on another connection or the exclusive property value does not match ' +
      'that of the original declaration.',
  );
}

/**
 * The exclusive-access rule as RabbitMQ's `check_exclusive_access`: a shared queue is open to every
 * connection; an exclusive one only to its owner. `strict` (redeclare) also refuses an exclusive
 * declare of a shared queue. Exported for the node's own checks (consume, get, purge, passive declare).
 */
export function checkExclusiveAccess(
  queue: QueueRecord,
  connectionId: string | undefined,
  strict = false,
): MetadataError | undefined {
  if (queue.exclusiveOwner === connectionId) return undefined;
  if (!strict && queue.exclusiveOwner === undefined) return undefined;
  return exclusiveLocked(queue.vhost, queue.name);
}
