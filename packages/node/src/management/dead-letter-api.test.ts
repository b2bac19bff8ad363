/**
 * The dead-letter inspector over HTTP, on a node alone with real dead-lettering: messages rejected
 * from a work queue land in its DLQ through the broker's routing, then are browsed.
 * (Across a cluster, from a node that does not lead the queue: test/cluster/dead-letter-inspector.test.ts.)
 */
import type { BasicProperties, FieldTable, FieldValue } from '@styx/client/wire';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Broker, Session } from '../broker/broker.ts';
import type { StoredMessage } from '../queue/types.ts';
import type { Credentials } from './test-support/management-harness.ts';
import { GUEST, ManagementHarness } from './test-support/management-harness.ts';

/** The parts of the inspector's JSON these tests read (message-views.ts has the whole shape). */
interface MessageJson {
  readonly body: { readonly preview: string } | null;
  readonly headers: Record<string, unknown>;
  readonly dead_lettering: Record<string, unknown>;
}
interface Reply {
  readonly next: number | null;
  readonly messages: MessageJson[];
  readonly filter: unknown;
  readonly error?: string;
  readonly reason?: string;
}

let harness: ManagementHarness;
let broker: Broker;

beforeEach(async () => {
  harness = await ManagementHarness.start('dlq-test');
  broker = harness.broker;
});

afterEach(async () => {
  await harness.stop();
});

async function api(method: string, path: string, body?: unknown, credentials: Credentials = GUEST) {
  const reply = await harness.api(method, path, body, credentials);
  return { status: reply.status, body: (reply.body ?? {}) as Reply };
}

function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

const session: Session = { user: 'guest', vhost: '/', connectionId: 'c1' };

async function declare(name: string, args: Record<string, FieldValue> = {}): Promise<void> {
  await broker.declareQueue(session, {
    queue: name,
    passive: false,
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: table(args),
  });
}

function stored(body: string | Uint8Array, properties: BasicProperties = {}): StoredMessage {
  return {
    exchange: '',
    routingKey: 'work',
    properties,
    body: typeof body === 'string' ? Buffer.from(body) : body,
    bcc: undefined,
  };
}

/** 'work' dead-letters through the default exchange to 'dlq'. */
async function topology(): Promise<void> {
  await declare('dlq');
  await declare('work', {
    'x-dead-letter-exchange': { longStr: '' },
    'x-dead-letter-routing-key': { longStr: 'dlq' },
  });
}

/** Publish `messages` to 'work', take them and reject them without requeue; wait until they are in 'dlq'. */
async function rejectIntoDlq(messages: readonly StoredMessage[]): Promise<void> {
  const work = broker.queueActor('/', 'work');
  const dlq = broker.queueActor('/', 'dlq');
  if (work === undefined || dlq === undefined) throw new Error('queues not running');
  const before = dlq.counts().ready;
  for (const m of messages) await work.enqueue(m, undefined);
  const ids: number[] = [];
  for (let i = 0; i < messages.length; i++) {
    const got = await work.get('owner', false);
    if (got === undefined) throw new Error('work queue empty');
    ids.push(got.id);
  }
  await work.discard('owner', ids);
  const deadline = Date.now() + 10_000;
  while (dlq.counts().ready < before + messages.length) {
    if (Date.now() > deadline) throw new Error('dead-letters did not arrive');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A user with `tags` and, when `read` is given, only that read permission in '/'. */
function makeUser(name: string, tags: string[], read?: string): Promise<Credentials> {
  return harness.makeUser(name, tags, read === undefined ? {} : { '/': { configure: '', write: '', read } });
}

describe('GET /api/queues/{vhost}/{name}/messages', () => {
  it('shows a rejected message in the DLQ with its x-death decoded, without consuming it', async () => {
    await topology();
    await rejectIntoDlq([
      stored('{"order":42}', {
        contentType: 'application/json',
        messageId: 'm-1',
        headers: table({ tenant: { longStr: 'acme' } }),
      }),
    ]);
    const reply = await api('GET', '/api/queues/%2F/dlq/messages');
    expect(reply.status).toBe(200);
    const page = reply.body;
    expect(page).toMatchObject({
      vhost: '/',
      queue: 'dlq',
      leader: 'dlq-test',
      ready: 1,
      next: null,
      filter: {},
    });
    expect(page.messages).toHaveLength(1);
    const m = page.messages[0] as (typeof page.messages)[number];
    expect(m).toMatchObject({
      delivery_count: 0,
      redelivered: false,
      size: 12,
      body_available: true,
      exchange: '',
      routing_key: 'dlq',
      properties: { content_type: 'application/json', message_id: 'm-1' },
      body: { encoding: 'json', preview: '{"order":42}', truncated: false, size: 12 },
    });
    expect(m.headers.tenant).toBe('acme');
    expect(m.dead_lettering.x_death).toEqual([
      {
        reason: 'rejected',
        queue: 'work',
        exchange: '',
        routing_keys: ['work'],
        count: 1,
        time: expect.any(Number),
        time_iso: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        original_expiration: null,
      },
    ]);
    expect(m.dead_lettering.first_death).toEqual({ reason: 'rejected', queue: 'work', exchange: '' });
    expect(m.dead_lettering.latest).toEqual({ reason: 'rejected', queue: 'work', exchange: '' });
    expect(m.dead_lettering.last_death).toBeNull();
    // Nothing was taken: the same page again, and the queue still counts it ready.
    expect((await api('GET', '/api/queues/%2F/dlq/messages')).body.messages).toHaveLength(1);
    expect(broker.queueActor('/', 'dlq')?.counts()).toMatchObject({ ready: 1, unacked: 0 });
  });

  it('previews text, binary (hex) and cut bodies', async () => {
    await declare('plain');
    const q = broker.queueActor('/', 'plain');
    await q?.enqueue(stored('hello, wörld'), undefined);
    await q?.enqueue(stored(new Uint8Array([0, 1, 2, 255])), undefined);
    await q?.enqueue(stored('é'.repeat(10)), undefined);
    const { body } = await api('GET', '/api/queues/%2F/plain/messages?body_bytes=7');
    expect(body.messages.map((m) => m.body)).toEqual([
      { encoding: 'text', preview: 'hello, ', truncated: true, size: 13 },
      { encoding: 'hex', preview: '000102ff', truncated: false, size: 4 },
      // 7 bytes cut the 4th 'é' (2 bytes each) in half: the half is dropped.
      { encoding: 'text', preview: 'ééé', truncated: true, size: 20 },
    ]);
    // A never dead-lettered message has an empty history.
    expect(body.messages[0]?.dead_lettering).toEqual({
      x_death: [],
      first_death: null,
      last_death: null,
      latest: null,
    });
  });

  it('pages with limit, offset and the next cursor', async () => {
    await declare('many');
    const q = broker.queueActor('/', 'many');
    for (let i = 0; i < 5; i++) await q?.enqueue(stored(`m${i}`), undefined);
    const previews = (reply: { body: Reply }): (string | undefined)[] =>
      reply.body.messages.map((m) => m.body?.preview);
    const first = await api('GET', '/api/queues/%2F/many/messages?limit=2');
    expect(previews(first)).toEqual(['m0', 'm1']);
    const second = await api('GET', `/api/queues/%2F/many/messages?limit=2&after=${first.body.next}`);
    expect(previews(second)).toEqual(['m2', 'm3']);
    expect(previews(await api('GET', '/api/queues/%2F/many/messages?offset=3'))).toEqual(['m3', 'm4']);
    const last = await api('GET', `/api/queues/%2F/many/messages?after=${second.body.next}`);
    expect(previews(last)).toEqual(['m4']);
    expect(last.body.next).toBeNull();
  });

  it('filters by reason, source queue, header and age', async () => {
    await topology();
    await declare('other', {
      'x-dead-letter-exchange': { longStr: '' },
      'x-dead-letter-routing-key': { longStr: 'dlq' },
    });
    await rejectIntoDlq([
      stored('a', { headers: table({ tenant: { longStr: 'acme' } }) }),
      stored('b', { headers: table({ tenant: { longStr: 'initech' }, attempt: { i32: 2 } }) }),
    ]);
    // One that expired in 'other' (TTL 0 is dead-lettered at once).
    await broker.queueActor('/', 'other')?.enqueue({ ...stored('c'), routingKey: 'other' }, 0);
    const dlq = broker.queueActor('/', 'dlq');
    const deadline = Date.now() + 10_000;
    while ((dlq?.counts().ready ?? 0) < 3 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    const bodies = async (query: string): Promise<string[]> => {
      const reply = await api('GET', `/api/queues/%2F/dlq/messages?${query}`);
      expect(reply.status).toBe(200);
      return reply.body.messages.map((m) => m.body?.preview as string);
    };
    expect(await bodies('')).toEqual(['a', 'b', 'c']);
    expect(await bodies('reason=rejected')).toEqual(['a', 'b']);
    expect(await bodies('reason=expired')).toEqual(['c']);
    expect(await bodies('reason=maxlen')).toEqual([]);
    expect(await bodies('source_queue=other')).toEqual(['c']);
    expect(await bodies('source_queue=work&header=tenant:initech')).toEqual(['b']);
    expect(await bodies('header=attempt:2&header=tenant:initech')).toEqual(['b']);
    expect(await bodies('header=tenant:acme&header=attempt:2')).toEqual([]);
    expect(await bodies('older_than_ms=3600000')).toEqual([]);
    expect(await bodies('newer_than_ms=3600000')).toEqual(['a', 'b', 'c']);
    const echoed = await api('GET', '/api/queues/%2F/dlq/messages?reason=expired&header=x:y');
    expect(echoed.body.filter).toEqual({ reason: 'expired', headers: [{ name: 'x', value: 'y' }] });
  });

  it.each([
    ['reason=timeout', /'reason' must be one of/],
    ['older_than_ms=soon', /'older_than_ms' must be a whole number/],
    ['header=nocolon', /'header' must be 'name:value'/],
    ['limit=0', /'limit' must be a whole number from 1 to 500/],
    ['limit=501', /'limit'/],
    ['limit=abc', /'limit' must be a whole number/],
    ['offset=-1', /'offset' must be a whole number/],
    ['body_bytes=65537', /'body_bytes' must be a whole number from 0 to 65536/],
    ['after=x', /'after' must be a whole number/],
    ['limit=1&limit=2', /'limit' may be given once/],
    ['reasons=expired', /unknown parameter 'reasons'/],
  ])('answers 400 to %s', async (query, reason) => {
    await declare('dlq');
    const reply = await api('GET', `/api/queues/%2F/dlq/messages?${query}`);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe('bad_request');
    expect(reply.body.reason).toMatch(reason);
  });

  it('answers 404 for an unknown queue or vhost', async () => {
    expect((await api('GET', '/api/queues/%2F/nope/messages')).status).toBe(404);
    expect((await api('GET', '/api/queues/novhost/q/messages')).status).toBe(404);
  });

  it("needs the read permission on the queue, and hides other vhosts' queues", async () => {
    await declare('dlq');
    await declare('secret.dlq');
    const reader = await makeUser('reader', ['management'], '^dlq$');
    expect((await api('GET', '/api/queues/%2F/dlq/messages', undefined, reader)).status).toBe(200);
    const refused = await api('GET', '/api/queues/%2F/secret.dlq/messages', undefined, reader);
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toMatch(/read permission needed/);
    // No permission entry in the vhost: as if the queue did not exist.
    const outsider = await makeUser('outsider', ['management']);
    expect((await api('GET', '/api/queues/%2F/dlq/messages', undefined, outsider)).status).toBe(404);
    // Monitoring sees every vhost's queues, not their messages.
    const monitor = await makeUser('monitor', ['monitoring']);
    expect((await api('GET', '/api/queues/%2F/dlq/messages', undefined, monitor)).status).toBe(403);
  });
});

describe('GET /api/queues/{vhost}/{name}/dead-lettering', () => {
  interface Explanation {
    readonly policy: string | null;
    readonly dead_letter_exchange: { value: string | null; exists: boolean | null; source: unknown };
    readonly routing: { routes: { queues: string[] | null }[] };
    readonly reasons: { reason: string; outcome: string }[];
    readonly warnings: { code: string; severity: string }[];
  }
  const explain = async (queue: string, credentials: Credentials = GUEST) => {
    const reply = await api('GET', `/api/queues/%2F/${queue}/dead-lettering`, undefined, credentials);
    return { status: reply.status, body: reply.body as unknown as Explanation & Reply };
  };

  it("follows the topology: a policy's DLX, missing, then declared and bound", async () => {
    await declare('work');
    expect(
      (
        await api('PUT', '/api/policies/%2F/DLX', {
          pattern: '^work$',
          definition: { 'dead-letter-exchange': 'my-dlx' },
        })
      ).status,
    ).toBe(201);
    const missing = await explain('work');
    expect(missing.status).toBe(200);
    expect(missing.body.policy).toBe('DLX');
    expect(missing.body.dead_letter_exchange).toMatchObject({
      value: 'my-dlx',
      exists: false,
      source: { from: 'policy', policy: 'DLX' },
    });
    expect(missing.body.warnings.map((w) => [w.code, w.severity])).toContainEqual([
      'dead_letter_exchange_missing',
      'error',
    ]);
    expect(missing.body.reasons.find((r) => r.reason === 'rejected')?.outcome).toBe('held');

    await broker.declareExchange(session, {
      exchange: 'my-dlx',
      type: 'fanout',
      passive: false,
      durable: true,
      autoDelete: false,
      internal: false,
    });
    const nowhere = await explain('work');
    expect(nowhere.body.warnings.map((w) => w.code)).toContain('dead_letter_exchange_routes_nowhere');

    await declare('dlq');
    await broker.bind(session, 'queue', 'dlq', 'my-dlx', '', undefined);
    const bound = await explain('work');
    expect(bound.body.dead_letter_exchange.exists).toBe(true);
    expect(bound.body.routing.routes.map((r) => r.queues)).toEqual([['dlq']]);
    expect(bound.body.warnings.map((w) => w.code)).toEqual(['at_least_once_overflow']);
    expect(bound.body.reasons.find((r) => r.reason === 'rejected')?.outcome).toBe('dead_lettered');
  });

  it('answers 404 for an unknown queue, or a vhost the user may not see', async () => {
    await declare('work');
    expect((await explain('nope')).status).toBe(404);
    const outsider = await makeUser('outsider2', ['management']);
    expect((await explain('work', outsider)).status).toBe(404);
    const reader = await makeUser('reader2', ['management'], '^$');
    expect((await explain('work', reader)).status).toBe(200);
  });
});
