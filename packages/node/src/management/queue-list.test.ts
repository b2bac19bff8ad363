// GET /api/queues with RabbitMQ's paging, through a real ManagementServer: sorted by the live
// counts of running queues, filtered, per vhost, and only the page rendered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManagementHarness } from './test-support/management-harness.ts';

let harness: ManagementHarness;

async function get(path: string): Promise<{ status: number; body: unknown }> {
  return harness.api('GET', path);
}

beforeAll(async () => {
  harness = await ManagementHarness.start('queue-list-test');
  const { broker } = harness;
  const session = { user: 'guest', vhost: '/', connectionId: 'c1' };
  for (const [name, depth] of [
    ['alpha', 2],
    ['beta', 0],
    ['gamma', 5],
    ['delta', 1],
  ] as const) {
    await broker.declareQueue(session, {
      queue: name,
      passive: false,
      durable: true,
      exclusive: false,
      autoDelete: false,
      arguments: { entries: [] },
    });
    for (let i = 0; i < depth; i++) {
      const body = Buffer.from(`${name}-${i}`);
      await broker
        .queueActor('/', name)
        ?.enqueue({ exchange: '', routingKey: name, properties: {}, body, bcc: undefined }, undefined);
    }
  }
});

afterAll(async () => {
  await harness.stop();
});

interface QueuePage {
  readonly items: readonly { name: string; messages: number }[];
  readonly filtered_count: number;
  readonly total_count: number;
  readonly page_count: number;
}

describe('GET /api/queues?page=', () => {
  it('sorts by depth, deepest first, one page at a time', async () => {
    const first = await get('/api/queues?page=1&page_size=2&sort=messages&sort_reverse=true');
    expect(first.status).toBe(200);
    const body = first.body as QueuePage;
    expect(body.items.map((q) => [q.name, q.messages])).toEqual([
      ['gamma', 5],
      ['alpha', 2],
    ]);
    expect(body).toMatchObject({ filtered_count: 4, total_count: 4, page_count: 2 });
    const second = (await get('/api/queues/%2F?page=2&page_size=2&sort=messages&sort_reverse=true'))
      .body as QueuePage;
    expect(second.items.map((q) => q.name)).toEqual(['delta', 'beta']);
  });

  it('filters by name and still answers the plain array without `page`', async () => {
    const filtered = (await get('/api/queues?page=1&name=^[ab]&use_regex=true')).body as QueuePage;
    expect(filtered.items.map((q) => q.name)).toEqual(['alpha', 'beta']);
    const all = (await get('/api/queues')).body as { name: string }[];
    expect(all.map((q) => q.name)).toEqual(['alpha', 'beta', 'delta', 'gamma']);
  });

  it('refuses an unknown sort key and a page past the end with 400', async () => {
    const sort = await get('/api/queues?page=1&sort=nope');
    expect(sort.status).toBe(400);
    expect((sort.body as { reason: string }).reason).toMatch(/^cannot sort by 'nope': one of name, vhost/);
    expect((await get('/api/queues?page=3&page_size=2')).status).toBe(400);
    // A vhost the user cannot see is a 404, paged or not.
    expect((await get('/api/queues/nowhere?page=1')).status).toBe(404);
  });
});

describe('GET /api/overview message_stats', () => {
  it("sums the message counters of this node's queues (the console charts their rates)", async () => {
    const overview = (await get('/api/overview')).body as { message_stats: Record<string, number> };
    expect(overview.message_stats).toEqual({ publish: 8, deliver_get: 0, redeliver: 0, ack: 0 });
  });
});
