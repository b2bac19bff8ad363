import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, MAX_DEFINITIONS_BYTES } from './request-body.ts';
import type { Credentials } from './test-support/management-harness.ts';
import { ALL, ManagementHarness } from './test-support/management-harness.ts';

/** Definitions exported by RabbitMQ 3.10.8 (test/fixtures/README.md). */
function fixture(name: string): Record<string, unknown[]> {
  return JSON.parse(readFileSync(new URL(`../../../../test/fixtures/${name}`, import.meta.url), 'utf8'));
}
const WHOLE = fixture('rabbitmq-3.10-definitions.json');
const SHOP = fixture('rabbitmq-3.10-definitions-vhost-shop.json');

/**
 * A password hash made the way RabbitMQ makes it (rabbit_password:hash/2): base64 of a random
 * 4-byte salt followed by the digest of salt ++ password. Written here from RabbitMQ's definition,
 * apart from the broker's verifier, so the test checks the verifier against the algorithm.
 */
function rabbitHash(digest: 'sha256' | 'sha512' | 'md5', password: string): string {
  const salt = randomBytes(4);
  const hash = createHash(digest)
    .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
    .digest();
  return Buffer.concat([salt, hash]).toString('base64');
}

type Item = Record<string, unknown>;

/** Items by a stable key, so lists from RabbitMQ and from Styx compare whatever their order. */
function keyed(list: unknown[], key: (item: Item) => string): Record<string, Item> {
  return Object.fromEntries((list as Item[]).map((item) => [key(item), item]));
}
const queueKey = (q: Item) => `${q.vhost ?? ''}/${q.name}`;
const bindingKey = (b: Item) =>
  `${b.vhost ?? ''}/${b.source}>${b.destination_type}:${b.destination}/${b.routing_key}/${JSON.stringify(b.arguments)}`;

let h: ManagementHarness;

beforeEach(async () => {
  h = await ManagementHarness.start();
});

afterEach(async () => {
  await h.stop();
});

describe('import of a RabbitMQ 3.10 export', () => {
  it('imports the whole-broker file and lists the same topology back', async () => {
    const reply = await h.api('POST', '/api/definitions', WHOLE);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      // The node already had '/' and guest's permissions there, as the file has them.
      imported: { vhosts: 1, users: 2, permissions: 2, policies: 2, exchanges: 4, queues: 5, bindings: 6 },
      unchanged: { vhosts: 1, users: 0, permissions: 1, policies: 0, exchanges: 0, queues: 0, bindings: 0 },
      // RabbitMQ's export leaves the internal exchange out but keeps its binding.
      skipped: [{ item: 'bindings[6]', reason: expect.stringContaining("no exchange 'orders.unrouted'") }],
    });

    const queues = (await h.api('GET', '/api/queues/shop')).body as Item[];
    expect(queues.map((q) => q.name)).toEqual([
      'audit.eu',
      'orders.dead',
      'orders.delay',
      'orders.unrouted.q',
      'orders.work',
    ]);
    expect(queues.every((q) => q.state === 'running')).toBe(true);
    const work = queues.find((q) => q.name === 'orders.work') as Item;
    // Its own DLX argument wins over the `retry` policy's; the policy's TTL and length apply.
    expect(work).toMatchObject({
      policy: 'retry',
      dead_letter_exchange: 'orders.dlx',
      dead_letter_routing_key: 'failed',
      effective_config: {
        message_ttl: 5000,
        max_length: 10000,
        overflow: 'reject-publish',
        delivery_limit: 5,
      },
    });
    const exchanges = (await h.api('GET', '/api/exchanges/shop')).body as Item[];
    expect(keyed(exchanges, (x) => x.name as string)).toMatchObject({
      audit: { type: 'headers' },
      orders: { type: 'topic' },
      'orders.dlx': { type: 'fanout', arguments: { 'alternate-exchange': 'orders.unrouted' } },
      'orders.retry': { type: 'direct' },
    });
    const policies = (await h.api('GET', '/api/policies')).body as Item[];
    expect(policies.map((p) => `${p.vhost}/${p.name}`)).toEqual(['//DLX', 'shop/retry']);
    const users = (await h.api('GET', '/api/users')).body as Item[];
    expect(users).toEqual([
      { name: 'guest', tags: ['administrator'] },
      { name: 'ops', tags: ['monitoring'] },
    ]);
    expect((await h.api('GET', '/api/permissions/shop/ops')).body).toMatchObject({
      configure: '^$',
      write: '^orders\\..*',
      read: '.*',
    });

    // The export holds what the file held (Styx adds `internal`, which RabbitMQ's export omits).
    const exported = (await h.api('GET', '/api/definitions')).body as Record<string, unknown[]>;
    expect(keyed(exported.queues as Item[], queueKey)).toEqual(
      keyed(
        (WHOLE.queues as Item[]).map(({ type: _type, ...q }) => q),
        queueKey,
      ),
    );
    expect(keyed(exported.exchanges as Item[], queueKey)).toEqual(
      keyed(
        (WHOLE.exchanges as Item[]).map((x) => ({ internal: false, ...x })),
        queueKey,
      ),
    );
    const imported = (WHOLE.bindings as Item[]).filter((b) => b.source !== 'orders.unrouted');
    expect(keyed(exported.bindings as Item[], bindingKey)).toEqual(keyed(imported, bindingKey));
    expect(keyed(exported.policies as Item[], queueKey)).toEqual(keyed(WHOLE.policies as Item[], queueKey));
    expect(exported.permissions).toEqual(
      [...(WHOLE.permissions as Item[])].sort((a, b) =>
        queueKey({ vhost: a.vhost, name: a.user }).localeCompare(queueKey({ vhost: b.vhost, name: b.user })),
      ),
    );
    // Users come back with RabbitMQ's hashes exactly as imported.
    expect(keyed(exported.users as Item[], (u) => u.name as string)).toEqual(
      keyed(WHOLE.users as Item[], (u) => u.name as string),
    );
    expect(exported).toMatchObject({ topic_permissions: [], parameters: [], global_parameters: [] });
  });

  it('lets imported users log in with their RabbitMQ passwords, over HTTP and AMQP', async () => {
    await h.api('POST', '/api/definitions', WHOLE);
    // RabbitMQ's own hashes from the file: guest/guest and ops/ops-pw.
    expect((await h.api('GET', '/api/whoami', undefined, { user: 'ops', password: 'ops-pw' })).body).toEqual({
      name: 'ops',
      tags: ['monitoring'],
    });
    expect((await h.api('GET', '/api/whoami', undefined, { user: 'ops', password: 'ops' })).status).toBe(401);
    await expect(
      h.broker.gate.authenticate('ops', 'ops-pw', 'shop', '127.0.0.1', 'c1'),
    ).resolves.toMatchObject({
      user: 'ops',
    });
    await expect(h.broker.gate.authenticate('ops', 'wrong', 'shop', '127.0.0.1', 'c2')).rejects.toThrow(
      /invalid credentials/,
    );
  });

  it('verifies sha256, sha512 and md5 hashes made as RabbitMQ makes them', async () => {
    const users = [
      {
        name: 'u256',
        hashing_algorithm: 'rabbit_password_hashing_sha256',
        password_hash: rabbitHash('sha256', 'pw-256'),
        tags: 'management',
      },
      {
        name: 'u512',
        hashing_algorithm: 'rabbit_password_hashing_sha512',
        password_hash: rabbitHash('sha512', 'pw-512'),
        tags: ['management'],
      },
      // RabbitMQ before 3.6 wrote no algorithm: its hashes are MD5.
      { name: 'u5', password_hash: rabbitHash('md5', 'pw-5ü'), tags: 'management' },
    ];
    expect((await h.api('POST', '/api/definitions', { users })).status).toBe(200);
    for (const [user, password] of [
      ['u256', 'pw-256'],
      ['u512', 'pw-512'],
      ['u5', 'pw-5ü'],
    ] as const) {
      expect((await h.api('GET', '/api/whoami', undefined, { user, password })).status, user).toBe(200);
      expect(
        (await h.api('GET', '/api/whoami', undefined, { user, password: `${password}x` })).status,
        user,
      ).toBe(401);
    }
    // A new password set through the API replaces the RabbitMQ hash with scrypt.
    await h.api('PUT', '/api/users/u256', { password: 'fresh' });
    expect((await h.api('GET', '/api/whoami', undefined, { user: 'u256', password: 'fresh' })).status).toBe(
      200,
    );
    const exported = (await h.api('GET', '/api/definitions')).body as { users: Item[] };
    expect(exported.users.find((u) => u.name === 'u256')).toMatchObject({
      hashing_algorithm: 'styx_password_hashing_scrypt',
      password_hash: expect.stringMatching(/^\$scrypt\$/),
    });
  });

  it('is idempotent: importing the same file again changes nothing', async () => {
    expect((await h.api('POST', '/api/definitions', WHOLE)).status).toBe(200);
    const first = (await h.api('GET', '/api/definitions')).body;
    const groups = (await h.api('GET', '/api/queues/shop')).body;
    const again = await h.api('POST', '/api/definitions', WHOLE);
    expect(again).toMatchObject({
      status: 200,
      body: {
        imported: { vhosts: 0, users: 0, permissions: 0, policies: 0, exchanges: 0, queues: 0, bindings: 0 },
        unchanged: { vhosts: 2, users: 2, permissions: 3, policies: 2, exchanges: 4, queues: 5, bindings: 6 },
      },
    });
    expect((await h.api('GET', '/api/definitions')).body).toEqual(first);
    expect((await h.api('GET', '/api/queues/shop')).body).toEqual(groups);
  });

  it("imports one vhost's file into a vhost, and exports it back", async () => {
    await h.api('PUT', '/api/vhosts/shop2');
    const reply = await h.api('POST', '/api/definitions/shop2', SHOP);
    expect(reply).toMatchObject({
      status: 200,
      body: { imported: { exchanges: 5, queues: 5, bindings: 7, policies: 1 }, skipped: [] },
    });
    const exported = (await h.api('GET', '/api/definitions/shop2')).body as Record<string, unknown[]>;
    expect(Object.keys(exported).sort()).toEqual([
      'bindings',
      'exchanges',
      'parameters',
      'policies',
      'queues',
      'rabbit_version',
      'rabbitmq_version',
    ]);
    for (const kind of ['queues', 'exchanges'] as const) {
      expect(keyed(exported[kind] as Item[], queueKey), kind).toEqual(keyed(SHOP[kind] as Item[], queueKey));
    }
    // Policies name their vhost in a vhost's export too: now the vhost the file went into.
    expect(exported.policies).toEqual((SHOP.policies as Item[]).map((p) => ({ ...p, vhost: 'shop2' })));
    expect(keyed(exported.bindings as Item[], bindingKey)).toEqual(
      keyed(SHOP.bindings as Item[], bindingKey),
    );
    expect((await h.api('GET', '/api/exchanges/shop2/orders.unrouted')).body).toMatchObject({
      internal: true,
    });
  });

  it('exports and re-imports its own users: a Styx export is a valid import', async () => {
    await h.makeUser('alice', ['management'], { '/': ALL });
    // A server-named queue and an exclusive one are a client's, not topology: left out.
    for (const [queue, exclusive] of [
      ['', false],
      ['mine', true],
    ] as const) {
      await h.broker.declareQueue(
        { user: 'guest', vhost: '/', connectionId: 'c1' },
        { queue, passive: false, durable: false, exclusive, autoDelete: false, arguments: { entries: [] } },
      );
    }
    await h.api('PUT', '/api/queues/%2F/kept', {});
    const exported = (await h.api('GET', '/api/definitions')).body as { queues: Item[] };
    expect(exported.queues.map((q) => q.name)).toEqual(['kept']);
    await h.api('DELETE', '/api/users/alice');
    expect((await h.api('POST', '/api/definitions', exported)).status).toBe(200);
    expect(
      (await h.api('GET', '/api/whoami', undefined, { user: 'alice', password: 'alice-pw' })).status,
    ).toBe(200);
  });
});

describe('refused imports', () => {
  const bad: [string, unknown, RegExp][] = [
    ['not an object', [1, 2], /must be a JSON object/],
    ['an unknown top-level field', { queus: [] }, /unknown field 'queus'/],
    ['a list that is not one', { queues: {} }, /'queues' must be a list/],
    [
      'an unknown field',
      { queues: [{ name: 'q', vhost: '/', durble: true }] },
      /queues\[0\]: unknown field 'durble'/,
    ],
    [
      'a wrong type',
      { queues: [{ name: 'q', vhost: '/', durable: 'yes' }] },
      /queues\[0\]: 'durable' must be true or false/,
    ],
    [
      'an empty name',
      { exchanges: [{ name: '', vhost: '/', type: 'direct' }] },
      /exchanges\[0\]: 'name' must not be empty/,
    ],
    [
      'an unknown exchange type',
      { exchanges: [{ name: 'x', vhost: '/', type: 'x-delayed-message' }] },
      /exchanges\[0\]: .*x-delayed-message/,
    ],
    [
      'a bad queue argument',
      { queues: [{ name: 'q', vhost: '/', arguments: { 'x-max-length': -1 } }] },
      /queues\[0\]: .*x-max-length/,
    ],
    ['a stream', { queues: [{ name: 'q', vhost: '/', type: 'stream' }] }, /queues\[0\]: .*stream/],
    [
      'a policy key Styx lacks',
      { policies: [{ vhost: '/', name: 'ha', pattern: '.*', definition: { 'ha-mode': 'all' } }] },
      /policies\[0\]: .*'ha-mode'/,
    ],
    [
      'topic permissions',
      { topic_permissions: [{ user: 'guest', vhost: '/', exchange: 'x', write: '.*', read: '.*' }] },
      /topic permissions/,
    ],
    [
      'a runtime parameter',
      { parameters: [{ vhost: '/', component: 'shovel', name: 's', value: {} }] },
      /runtime parameters \('shovel'\)/,
    ],
    ['limits', { vhosts: [{ name: 'v', limits: { 'max-queues': 5 } }] }, /vhosts\[0\]: 'limits'/],
    [
      'an unknown hashing algorithm',
      { users: [{ name: 'u', password_hash: 'abc', hashing_algorithm: 'bcrypt', tags: '' }] },
      /'hashing_algorithm' 'bcrypt'/,
    ],
    [
      'a hash of the wrong length',
      {
        users: [
          { name: 'u', password_hash: 'AAAA', hashing_algorithm: 'rabbit_password_hashing_sha256', tags: '' },
        ],
      },
      /users\[0\]: 'password_hash': .*36 bytes/,
    ],
    [
      'a scrypt hash asking 8 GiB per login (N=2^20, r=64)',
      {
        users: [
          {
            name: 'greedy',
            password_hash: `$scrypt$N=1048576,r=64,p=1$${'A'.repeat(22)}==$${'B'.repeat(43)}=`,
            hashing_algorithm: 'styx_password_hashing_scrypt',
            tags: '',
          },
        ],
      },
      /users\[0\]: user 'greedy': 'password_hash': scrypt parameters N=1048576,r=64,p=1 are too costly \(this node verifies N <= 131072, r <= 16, p <= 4 and 128\*N\*r <= 64 MiB\)/,
    ],
    [
      'a scrypt hash within each bound but needing 128 MiB (N=2^17, r=8)',
      {
        users: [
          {
            name: 'wide',
            password_hash: `$scrypt$N=131072,r=8,p=1$${'A'.repeat(22)}==$${'B'.repeat(43)}=`,
            hashing_algorithm: 'styx_password_hashing_scrypt',
            tags: '',
          },
        ],
      },
      /user 'wide': 'password_hash': scrypt parameters N=131072,r=8 need 128 MiB per login/,
    ],
    [
      'a permission for an unknown user',
      { permissions: [{ user: 'ghost', vhost: '/', configure: '', write: '', read: '' }] },
      /permissions\[0\]: .*ghost/,
    ],
    [
      'a binding of a wrong kind',
      {
        bindings: [
          { vhost: '/', source: 'amq.direct', destination: 'q', destination_type: 'stream', routing_key: '' },
        ],
      },
      /bindings\[0\]: 'destination_type'/,
    ],
  ];

  for (const [what, body, reason] of bad) {
    it(`answers 400 naming the item for ${what}`, async () => {
      const reply = await h.api('POST', '/api/definitions', body);
      expect(reply.status).toBe(400);
      expect((reply.body as { error: string; reason: string }).error).toBe('bad_request');
      expect((reply.body as { reason: string }).reason).toMatch(reason);
    });
  }

  it('answers 400 for a body that is not JSON and 413 for one over the bound', async () => {
    expect((await h.api('POST', '/api/definitions', '{"queues": [')).status).toBe(400);
    // Definitions files may be larger than other bodies (a big topology)...
    const large = JSON.stringify({
      vhosts: [{ name: 'big', metadata: { description: 'x'.repeat(2 * MAX_BODY_BYTES) } }],
    });
    expect((await h.api('PUT', '/api/vhosts/big', large)).status).toBe(413);
    expect((await h.api('POST', '/api/definitions', large)).status).toBe(200);
    expect((await h.api('GET', '/api/vhosts/big')).status).toBe(200);
    // ...up to their own bound.
    const huge = JSON.stringify({ vhosts: [{ name: 'x'.repeat(MAX_DEFINITIONS_BYTES) }] });
    const reply = await h.api('POST', '/api/definitions', huge);
    expect(reply.status).toBe(413);
    expect((reply.body as { reason: string }).reason).toBe(
      `request body is larger than ${MAX_DEFINITIONS_BYTES} bytes`,
    );
  });

  it('changes nothing when any item is refused, even one the broker alone can judge', async () => {
    await h.api('PUT', '/api/queues/%2F/existing', { arguments: { 'x-message-ttl': 1000 } });
    const file = {
      vhosts: [{ name: 'fresh' }],
      users: [
        {
          name: 'newbie',
          password_hash: rabbitHash('sha256', 'x'),
          hashing_algorithm: 'rabbit_password_hashing_sha256',
          tags: '',
        },
      ],
      queues: [
        { name: 'new.q', vhost: '/', durable: true, auto_delete: false, arguments: {} },
        // Exists with another TTL: the import would fail here, after the rest was made.
        {
          name: 'existing',
          vhost: '/',
          durable: true,
          auto_delete: false,
          arguments: { 'x-message-ttl': 5 },
        },
      ],
    };
    const reply = await h.api('POST', '/api/definitions', file);
    expect(reply.status).toBe(400);
    expect((reply.body as { reason: string }).reason).toMatch(
      /queues\[1\]: inequivalent arg 'x-message-ttl'/,
    );
    expect((await h.api('GET', '/api/vhosts/fresh')).status).toBe(404);
    expect((await h.api('GET', '/api/users/newbie')).status).toBe(404);
    expect((await h.api('GET', '/api/queues/%2F/new.q')).status).toBe(404);
  });

  it('refuses a vhost file with users, a vhost of the wrong type, or into a missing vhost', async () => {
    await h.api('PUT', '/api/vhosts/shop2');
    const withUsers = await h.api('POST', '/api/definitions/shop2', { ...SHOP, users: [] });
    expect(withUsers).toMatchObject({
      status: 400,
      body: { reason: expect.stringMatching(/unknown field 'users'/) },
    });
    const badVhost = await h.api('POST', '/api/definitions/shop2', { queues: [{ name: 'q', vhost: 7 }] });
    expect(badVhost).toMatchObject({
      status: 400,
      body: { reason: expect.stringMatching(/queues\[0\]: 'vhost' must be a string/) },
    });
    expect((await h.api('POST', '/api/definitions/nowhere', SHOP)).status).toBe(404);
    expect((await h.api('GET', '/api/definitions/nowhere')).status).toBe(404);
  });
});

describe('who may use definitions', () => {
  it('is administrators only: every other tag gets 403, with nothing imported', async () => {
    const others: Credentials[] = [];
    for (const tag of ['monitoring', 'management', 'policymaker']) {
      others.push(await h.makeUser(`u-${tag}`, [tag], { '/': ALL }));
    }
    for (const as of others) {
      for (const [method, path] of [
        ['GET', '/api/definitions'],
        ['GET', '/api/definitions/%2F'],
        ['POST', '/api/definitions'],
        ['POST', '/api/definitions/%2F'],
      ] as const) {
        const body = method === 'POST' ? { queues: [{ name: 'sneaky', vhost: '/' }] } : undefined;
        const reply = await h.api(method, path, body, as);
        expect(reply.status, `${as.user} ${method} ${path}`).toBe(403);
      }
    }
    expect((await h.api('GET', '/api/queues/%2F/sneaky')).status).toBe(404);
  });

  it('shows monitoring users no users or password hashes, and policies only to policymakers', async () => {
    await h.api('POST', '/api/definitions', WHOLE);
    const ops = { user: 'ops', password: 'ops-pw' };
    expect((await h.api('GET', '/api/users', undefined, ops)).status).toBe(403);
    expect((await h.api('GET', '/api/policies', undefined, ops)).status).toBe(403);
    // Monitoring sees every vhost, read only.
    expect(((await h.api('GET', '/api/vhosts', undefined, ops)).body as Item[]).map((v) => v.name)).toEqual([
      '/',
      'shop',
    ]);
    expect(((await h.api('GET', '/api/queues', undefined, ops)).body as Item[]).length).toBe(5);
    const maker = await h.makeUser('maker', ['policymaker'], { shop: ALL });
    const seen = (await h.api('GET', '/api/policies', undefined, maker)).body as Item[];
    expect(seen.map((p) => p.name)).toEqual(['retry']);
  });
});
