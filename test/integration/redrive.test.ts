// Redrive end to end against a real `styx server`: messages rejected into a dead-letter queue, a
// dry run (what would move where, nothing moved), a real redrive back to the source queue (the
// messages consumed from it, x-death kept, the DLQ empty), the audit listed, an unroutable target
// (messages stay, counted failed with the reason), a slow redrive cancelled midway (what it moved
// is in the target, the rest still in the DLQ, counts exact), bad requests (400 with the reason),
// permissions (403), `styx ctl redrive` / `list_redrives` printing progress and the audit, and a
// redrive resumed by its node after a restart (the cluster test kills the owner instead).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Channel, Connection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { Inbox, unique, useBroker, WAIT_MS, waitFor, withTimeout } from './messaging-helpers.ts';

const GUEST = { user: 'guest', password: 'guest' };

const { broker: node, connect } = useBroker({ management: true });

type Json = Record<string, unknown>;

async function api(
  method: string,
  path: string,
  body?: unknown,
  credentials = GUEST,
): Promise<{ status: number; body: Json }> {
  const url = node().managementUrl;
  if (url === undefined) throw new Error('management API not started');
  const headers: Record<string, string> = {
    Authorization: `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`,
  };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const response = await withTimeout(
    fetch(`${url}${path}`, { method, headers, body: payload }),
    WAIT_MS,
    path,
  );
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Json) };
}

let lastConnection: Connection | undefined;

async function channel(): Promise<Channel> {
  lastConnection = await connect();
  return lastConnection.createChannel();
}

/** Queue `name` dead-lettering (rejected) into `name.dlq`; `count` messages rejected into it. */
async function rejectedInto(name: string, count: number): Promise<string> {
  const dlq = `${name}.dlq`;
  const ch = await channel();
  await ch.assertQueue(dlq, { durable: true });
  await ch.assertQueue(name, { durable: true, deadLetterExchange: '', deadLetterRoutingKey: dlq });
  const pub = await (lastConnection as Connection).createConfirmChannel();
  for (let i = 0; i < count; i++) pub.sendToQueue(name, Buffer.from(`m${i}`), { headers: { n: i } });
  await withTimeout(pub.waitForConfirms(), WAIT_MS, 'confirms');
  const consumer = await channel();
  await consumer.prefetch(count);
  const inbox = new Inbox();
  const { consumerTag } = await consumer.consume(name, inbox.onMessage);
  for (const m of await inbox.atLeast(count)) consumer.reject(m, false);
  await consumer.cancel(consumerTag);
  await waitFor(async () => (await ch.checkQueue(dlq)).messageCount === count, `${count} in ${dlq}`);
  return dlq;
}

async function redriveDone(id: string, timeoutMs = 20_000): Promise<Json> {
  let record: Json = {};
  await waitFor(
    async () => {
      record = (await api('GET', `/api/redrives/${id}`)).body;
      return record.state !== 'running';
    },
    `redrive ${id} to end`,
    timeoutMs,
    100,
  );
  return record;
}

async function bodiesOf(queue: string): Promise<string[]> {
  const ch = await channel();
  const out: string[] = [];
  for (;;) {
    const m = await ch.get(queue, { noAck: true });
    if (m === false) return out;
    out.push(m.content.toString());
  }
}

describe('redrive', () => {
  it('dry run, then moves rejected messages back to their source queue, and lists the audit', async () => {
    const name = unique('rd.work');
    const dlq = await rejectedInto(name, 10);

    const dry = await api('POST', `/api/queues/%2F/${dlq}/redrive`, {
      target: 'source',
      filter: { reason: 'rejected' },
      dry_run: true,
    });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({
      state: 'done',
      dry_run: true,
      total: 10,
      would_move: 10,
      would_fail: 0,
    });
    expect(dry.body.targets).toEqual([{ exchange: '', routing_key: name, count: 10 }]);
    const sample = dry.body.sample as Json[];
    expect(sample.length).toBeGreaterThan(0);
    expect(sample[0]).toMatchObject({ exchange: '', routing_key: name, queues: [name], failure: null });
    // A dry run moves nothing.
    const ch = await channel();
    expect((await ch.checkQueue(dlq)).messageCount).toBe(10);

    const started = await api('POST', `/api/queues/%2F/${dlq}/redrive`, { target: 'source' });
    expect(started.status).toBe(202);
    const done = await redriveDone(started.body.id as string);
    expect(done).toMatchObject({
      state: 'done',
      moved: 10,
      failed: 0,
      remaining: 0,
      total: 10,
      user: 'guest',
    });
    expect((await ch.checkQueue(dlq)).messageCount).toBe(0);

    // Consumed from the source queue, in order, with their x-death kept.
    const consumer = await channel();
    const inbox = new Inbox();
    await consumer.consume(name, inbox.onMessage, { noAck: true });
    const back = await inbox.atLeast(10);
    expect(back.map((m) => m.content.toString())).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    const death = (back[0]?.properties.headers?.['x-death'] as Json[] | undefined)?.[0];
    expect(death).toMatchObject({ queue: name, reason: 'rejected' });

    const audit = await api('GET', '/api/redrives?vhost=%2F');
    const ids = (audit.body as unknown as Json[]).map((r) => r.id);
    // Dry runs are not part of the audit (so none can push real runs out of it).
    expect(ids).not.toContain(dry.body.id);
    expect(ids).toContain(started.body.id);
    expect((audit.body as unknown as Json[])[0]?.id).toBe(started.body.id);
  });

  it('leaves messages its target routes nowhere, counted failed with the reason', async () => {
    const dlq = await rejectedInto(unique('rd.lost'), 3);
    const started = await api('POST', `/api/queues/%2F/${dlq}/redrive`, {
      target: { exchange: 'amq.direct', routing_key: 'bound-to-nothing' },
    });
    expect(started.status).toBe(202);
    const done = await redriveDone(started.body.id as string);
    expect(done).toMatchObject({ state: 'done', moved: 0, failed: 3 });
    expect(done.failures).toEqual([
      { reason: "unroutable: exchange 'amq.direct' routes key 'bound-to-nothing' to no queue", count: 3 },
    ]);
    expect((await (await channel()).checkQueue(dlq)).messageCount).toBe(3);

    // Back to a source queue deleted since: they stay too, and the reason says so.
    const gone = unique('rd.gone');
    const goneDlq = await rejectedInto(gone, 2);
    expect((await api('DELETE', `/api/queues/%2F/${gone}`)).status).toBe(204);
    const toSource = await api('POST', `/api/queues/%2F/${goneDlq}/redrive`, { target: 'source' });
    const ended = await redriveDone(toSource.body.id as string);
    expect(ended).toMatchObject({ state: 'done', moved: 0, failed: 2 });
    expect(ended.failures).toEqual([
      { reason: `unroutable: no queue '${gone}' in vhost '/' (deleted since?)`, count: 2 },
    ]);
  });

  it('moves only what the filter selects, and at most max_messages', async () => {
    const name = unique('rd.some');
    const dlq = await rejectedInto(name, 6);
    const one = await api('POST', `/api/queues/%2F/${dlq}/redrive`, {
      target: 'source',
      filter: { reason: 'rejected', source_queue: name, headers: [{ name: 'n', value: '3' }] },
    });
    expect(await redriveDone(one.body.id as string)).toMatchObject({ state: 'done', total: 1, moved: 1 });
    expect(await bodiesOf(name)).toEqual(['m3']);
    const capped = await api('POST', `/api/queues/%2F/${dlq}/redrive`, { target: 'source', max_messages: 2 });
    expect(await redriveDone(capped.body.id as string)).toMatchObject({ state: 'done', total: 2, moved: 2 });
    expect(await bodiesOf(name)).toEqual(['m0', 'm1']);
    expect(await bodiesOf(dlq)).toEqual(['m2', 'm4', 'm5']);
  });

  it('cancels a slow redrive midway: what moved is in the target, the rest stays, counts exact', async () => {
    const name = unique('rd.slow');
    const dlq = await rejectedInto(name, 20);
    const started = await api('POST', `/api/queues/%2F/${dlq}/redrive`, { target: 'source', rate: 4 });
    const id = started.body.id as string;
    // One real redrive per queue at a time: a second would move the same messages.
    const second = await api('POST', `/api/queues/%2F/${dlq}/redrive`, { target: 'source' });
    expect(second.status).toBe(400);
    expect(second.body.reason).toMatch(new RegExp(`redrive '${id}' .* is running`));
    await waitFor(
      async () => ((await api('GET', `/api/redrives/${id}`)).body.moved as number) >= 2,
      'a few moved',
      10_000,
      50,
    );
    const cancel = await api('DELETE', `/api/redrives/${id}`);
    expect(cancel.status).toBe(200);
    expect(cancel.body.cancel_requested).toBe(true);
    const ended = await redriveDone(id);
    expect(ended.state).toBe('cancelled');
    const moved = ended.moved as number;
    expect(moved).toBeGreaterThanOrEqual(2);
    expect(moved).toBeLessThan(20);
    const inSource = await bodiesOf(name);
    const inDlq = await bodiesOf(dlq);
    expect(inSource).toHaveLength(moved);
    expect([...inSource, ...inDlq].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`).sort());
  });

  it('answers a malformed request with 400 and the reason, an unknown queue with 404', async () => {
    const dlq = await rejectedInto(unique('rd.bad'), 1);
    const path = `/api/queues/%2F/${dlq}/redrive`;
    const cases: [unknown, RegExp][] = [
      ['{not json', /not valid JSON/],
      [[1, 2], /JSON object/],
      [{}, /'target' is required/],
      [{ target: 'elsewhere' }, /'target' must be/],
      [{ target: { exchange: 'x' } }, /routing_key/],
      [{ target: 'source', filter: { reason: 'bored' } }, /bad 'filter'.*reason/],
      [{ target: 'source', filter: { colour: 'red' } }, /unknown filter field 'colour'/],
      [{ target: 'source', rate: 0 }, /'rate'/],
      [{ target: 'source', max_messages: -3 }, /'max_messages'/],
      [{ target: 'source', dryrun: true }, /unknown field 'dryrun'/],
    ];
    for (const [body, reason] of cases) {
      const reply = await api('POST', path, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.body.error).toBe('bad_request');
      expect(reply.body.reason).toMatch(reason);
    }
    expect((await api('POST', '/api/queues/%2F/no-such-queue/redrive', { target: 'source' })).status).toBe(
      404,
    );
    const missingExchange = await api('POST', path, { target: { exchange: 'nope', routing_key: 'k' } });
    expect(missingExchange.status).toBe(404);
    expect((await api('GET', '/api/redrives/no-such-id')).status).toBe(404);
    expect((await api('DELETE', '/api/redrives/no-such-id')).status).toBe(404);
  });

  it('needs read on the queue and write on the target exchange, and a management tag', async () => {
    const dlq = await rejectedInto(unique('rd.perm'), 1);
    const path = `/api/queues/%2F/${dlq}/redrive`;
    const makeUser = async (user: string, tags: string[], write: string): Promise<typeof GUEST> => {
      expect((await api('PUT', `/api/users/${user}`, { password: 'pw', tags })).status).toBe(201);
      await api('PUT', `/api/permissions/%2F/${user}`, { configure: '', write, read: '.*' });
      return { user, password: 'pw' };
    };
    // Monitoring includes management (RabbitMQ): with its permissions in the vhost it may redrive.
    const monitor = await makeUser(unique('mon'), ['monitoring'], '.*');
    expect((await api('POST', path, { target: 'source', dry_run: true }, monitor)).status).toBe(200);
    expect((await api('GET', '/api/redrives', undefined, monitor)).status).toBe(200);
    const noWrite = await makeUser(unique('nw'), ['management'], '^amq\\.direct$');
    const refused = await api('POST', path, { target: 'source' }, noWrite);
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toMatch(/write permission/);
    const dryToo = await api('POST', path, { target: 'source', dry_run: true }, noWrite);
    expect(dryToo.status).toBe(403);
    const toDirect = await api(
      'POST',
      path,
      { target: { exchange: 'amq.direct', routing_key: 'k' }, dry_run: true },
      noWrite,
    );
    expect(toDirect.status).toBe(200);
    expect(toDirect.body.user).toBe(noWrite.user);
  });

  it('styx ctl redrive prints a dry run, then follows a redrive with its progress; list_redrives shows it', async () => {
    const name = unique('rd.cli');
    const dlq = await rejectedInto(name, 5);
    const ctl = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts'), 'ctl', ...args],
          { cwd: REPO_ROOT, timeout: 30_000, env: { ...process.env, STYX_NODE: node().managementUrl ?? '' } },
          (error, stdout, stderr) => {
            if (error !== null && typeof error.code !== 'number') reject(error);
            else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
          },
        );
      });
    const dry = await ctl('redrive', dlq, '--to-source', '--dry-run', '--reason', 'rejected');
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('Dry run: 5 of 5 selected messages would move, 0 would stay');
    expect(dry.stdout).toContain(`\t${name}\t5`);
    const run = await ctl('redrive', dlq, '--to-source', '--rate', '20');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/Redriving messages of queue .* \(redrive [0-9a-z-]+\) \.\.\./);
    expect(run.stdout).toMatch(/done: moved 5, remaining 0, failed 0/);
    expect(await bodiesOf(name)).toHaveLength(5);
    const listed = await ctl('list_redrives', '-p', '/');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain('Listing redrives ...');
    expect(listed.stdout).toMatch(
      new RegExp(`${dlq.replaceAll('.', '\\.')}\\tguest\\tdone\\tfalse\\tsource queues\\t5\\t0\\t0`),
    );
    const usage = await ctl('redrive', dlq);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('give either --to-source or --exchange');
    const help = await ctl('redrive', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--to-source');
  }, 90_000);
});

describe('redrive across a restart of its node', () => {
  let restarted: BrokerProcess | undefined;
  afterAll(async () => {
    await restarted?.kill();
    await restarted?.cleanup();
  });

  it('resumes a redrive whose node was stopped midway (SIGTERM): every message moved, counted once, none failed', async () => {
    let own = await startBroker({ management: true });
    restarted = own;
    const conn = await withTimeout(amqp.connect(own.url), WAIT_MS, 'connect');
    conn.on('error', () => undefined);
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue('rs.dlq', { durable: true });
    await ch.assertQueue('rs.work', {
      durable: true,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'rs.dlq',
    });
    for (let i = 0; i < 30; i++) ch.sendToQueue('rs.work', Buffer.from(`m${i}`), { persistent: true });
    await withTimeout(ch.waitForConfirms(), WAIT_MS, 'confirms');
    const consumer = await conn.createChannel();
    await consumer.prefetch(30);
    const inbox = new Inbox();
    await consumer.consume('rs.work', inbox.onMessage);
    for (const m of await inbox.atLeast(30)) consumer.reject(m, false);
    await waitFor(async () => (await ch.checkQueue('rs.dlq')).messageCount === 30, '30 dead letters');
    await conn.close().catch(() => undefined);

    const call = async (path: string, init: RequestInit = {}): Promise<Json> => {
      const response = await fetch(`${own.managementUrl}${path}`, {
        ...init,
        headers: {
          Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
          'Content-Type': 'application/json',
        },
        signal: AbortSignal.timeout(WAIT_MS),
      });
      return (await response.json()) as Json;
    };
    const started = await call('/api/queues/%2F/rs.dlq/redrive', {
      method: 'POST',
      body: JSON.stringify({ target: 'source', rate: 10 }),
    });
    const id = started.id as string;
    await waitFor(
      async () => ((await call(`/api/redrives/${id}`)).moved as number) >= 5,
      'some moved',
      10_000,
      50,
    );
    // A clean stop closes the queues under the running redrive: it must not count that as failures.
    await own.stop();
    own = await startBroker({ management: true, dataDir: own.dataDir });
    restarted = own;
    let record: Json = {};
    await waitFor(
      async () => {
        record = await call(`/api/redrives/${id}`);
        return record.state !== 'running';
      },
      'the redrive resumed and done',
      30_000,
      100,
    );
    expect(record).toMatchObject({ state: 'done', moved: 30, failed: 0, remaining: 0, takeovers: 0 });
    const after = await withTimeout(amqp.connect(own.url), WAIT_MS, 'connect');
    after.on('error', () => undefined);
    const reader = await after.createChannel();
    expect((await reader.checkQueue('rs.dlq')).messageCount).toBe(0);
    const seen = new Set<string>();
    let copies = 0;
    for (;;) {
      const m = await reader.get('rs.work', { noAck: true });
      if (m === false) break;
      seen.add(m.content.toString());
      copies++;
    }
    await after.close().catch(() => undefined);
    expect(seen.size).toBe(30);
    // At most the batch in flight when the node stopped (10 at 10 msgs/s) came twice.
    expect(copies - 30).toBeLessThanOrEqual(10);
  }, 90_000);
});
