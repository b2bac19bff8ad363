/** Tests only: a durable queue record '/' 'q' of group 'g', with `over` on top. */
import type { QueueRecord } from '../metadata/types.ts';

export function queueRecord(over: Partial<QueueRecord> = {}): QueueRecord {
  return {
    vhost: '/',
    name: 'q',
    durable: true,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: { entries: [] },
    groupId: 'g',
    ...over,
  };
}
