/**
 * The queue list's paging (`GET /api/queues[/{vhost}]?page=…`, pagination.ts): the fields a page
 * can be sorted by, read cheaply from each queue's record and running actor so that sorting
 * 10,000 queues by depth needs no full queue view.
 */
import type { Broker } from '../broker/broker.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { QueueCounts, RemovalTotals } from '../queue/types.ts';
import type { PageableList, SortValue } from './pagination.ts';
import type { Json } from './views.ts';

function total(t: RemovalTotals | undefined): number {
  return t === undefined ? 0 : t.rejected + t.expired + t.maxlen + t.delivery_limit;
}

/** Pages of `GET /api/queues`: `json` renders one queue (only those on the page are rendered). */
export function queueListPaging(broker: Broker, json: (q: QueueRecord) => Json): PageableList<QueueRecord> {
  const actor = (q: QueueRecord) => {
    const running = broker.queueActor(q.vhost, q.name);
    return running !== undefined && running.groupId === q.groupId ? running : undefined;
  };
  const count =
    (pick: (c: QueueCounts) => number) =>
    (q: QueueRecord): SortValue => {
      const counts = actor(q)?.counts();
      return counts === undefined ? 0 : pick(counts);
    };
  return {
    name: (q) => q.name,
    json,
    sortKeys: {
      name: (q) => q.name,
      vhost: (q) => q.vhost,
      durable: (q) => q.durable,
      state: (q) => (actor(q) === undefined ? 'stopped' : 'running'),
      policy: (q) => broker.metadataView.policyFor(q.vhost, 'queue', q.name)?.name ?? null,
      messages: count((c) => c.ready + c.unacked),
      messages_ready: count((c) => c.ready),
      messages_unacknowledged: count((c) => c.unacked),
      message_bytes_ready: count((c) => c.readyBytes),
      consumers: count((c) => c.consumers),
      messages_dead_letter_pending: count((c) => c.deadLetterPending),
      dead_lettered: (q) => total(actor(q)?.deadLetterTotals()?.deadLettered),
    },
  };
}
