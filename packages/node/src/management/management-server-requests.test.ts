import { request as httpRequest } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../broker/broker.ts';
import { silentLogger } from '../logging/logger.ts';
import type { ManagementServerOptions } from './management-server.ts';
import { ManagementServer } from './management-server.ts';

// The request layer of the management listener: the Host allow-list, the JSON-only rule for
// bodies, the origin rule for every means of authentication, no basic-auth challenge to browsers,
// and /metrics behind basic auth when asked.

const GUEST_AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

let broker: Broker;
let server: ManagementServer;
let base: string;
let port: number;

async function startServer(options: Partial<ManagementServerOptions> = {}): Promise<void> {
  server = new ManagementServer({ broker, logger: silentLogger(), ...options });
  port = (await server.start('127.0.0.1', 0)).port;
  base = server.url as string;
}

beforeEach(async () => {
  broker = await Broker.start({ nodeName: 'requests-test', logger: silentLogger(), memoryBudgetBytes: 0 });
});

afterEach(async () => {
  await server?.close();
  await broker.shutdown();
});

interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: { error?: string; reason?: string } | undefined;
}

/**
 * A request with exactly these headers (node:http: fetch would add its own Content-Type to a
 * string body and will not send a chosen Host).
 */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const json = res.headers['content-type']?.startsWith('application/json') && text !== '';
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: json ? JSON.parse(text) : undefined,
        });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A definitions file that would import an administrator 'evil'. */
const EVIL_DEFINITIONS = JSON.stringify({
  users: [{ name: 'evil', password: 'evil', tags: 'administrator' }],
  permissions: [{ user: 'evil', vhost: '/', configure: '.*', write: '.*', read: '.*' }],
});

describe('request bodies', () => {
  beforeEach(() => startServer());

  it('takes only application/json on a state-changing request: a form-shaped body is 415 and changes nothing', async () => {
    for (const type of [
      'text/plain',
      'text/plain;charset=UTF-8',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----x',
      undefined,
    ]) {
      const headers: Record<string, string> = { Authorization: GUEST_AUTH };
      if (type !== undefined) headers['Content-Type'] = type;
      const imported = await raw('POST', '/api/definitions', headers, EVIL_DEFINITIONS);
      expect([type, imported.status, imported.body?.error]).toEqual([type, 415, 'unsupported_media_type']);
      const user = await raw('PUT', '/api/users/x', headers, '{"password":"x","tags":"administrator"}');
      expect([type, user.status]).toEqual([type, 415]);
    }
    expect(broker.metadataView.user('evil')).toBeUndefined();
    expect(broker.metadataView.user('x')).toBeUndefined();
    // A declared form type is refused even without a body (an empty form is still a form).
    const empty = await raw('PUT', '/api/vhosts/v', {
      Authorization: GUEST_AUTH,
      'Content-Type': 'text/plain',
    });
    expect(empty.status).toBe(415);
    expect(broker.metadataView.vhost('v')).toBeUndefined();
  });

  it('takes JSON (with a charset too) and bodiless changes as before', async () => {
    const json = { Authorization: GUEST_AUTH, 'Content-Type': 'application/json; charset=utf-8' };
    expect((await raw('PUT', '/api/users/x', json, '{"password":"x","tags":""}')).status).toBe(201);
    expect((await raw('PUT', '/api/vhosts/v', { Authorization: GUEST_AUTH })).status).toBe(201);
    expect((await raw('DELETE', '/api/vhosts/v', { Authorization: GUEST_AUTH })).status).toBe(204);
  });
});

describe('requests from other origins', () => {
  beforeEach(() => startServer());

  it('refuses a state-changing request that says it comes from another origin (403), with basic auth too', async () => {
    const json = { Authorization: GUEST_AUTH, 'Content-Type': 'application/json' };
    const foreign: Record<string, string>[] = [
      { Origin: 'http://evil.example' },
      { Origin: 'null' },
      { Origin: `http://localhost:${port + 1}` },
      { 'Sec-Fetch-Site': 'cross-site' },
      { 'Sec-Fetch-Site': 'same-site' },
    ];
    for (const from of foreign) {
      const reply = await raw('POST', '/api/definitions', { ...json, ...from }, EVIL_DEFINITIONS);
      expect([from, reply.status, reply.body?.reason]).toEqual([
        from,
        403,
        expect.stringMatching(/^cross-origin request refused/),
      ]);
    }
    expect(broker.metadataView.user('evil')).toBeUndefined();
    // From this origin (the console's own fetches), and from tools that say nothing, it goes through.
    const own = { ...json, Origin: base, 'Sec-Fetch-Site': 'same-origin' };
    expect((await raw('PUT', '/api/users/a', own, '{"password":"a","tags":""}')).status).toBe(201);
    expect((await raw('PUT', '/api/users/b', json, '{"password":"b","tags":""}')).status).toBe(201);
    // Reads are not refused: without CORS headers the other site cannot see the reply.
    const read = await raw('GET', '/api/whoami', {
      Authorization: GUEST_AUTH,
      Origin: 'http://evil.example',
    });
    expect(read.status).toBe(200);
  });

  it('sends no basic-auth challenge to a browser (Fetch Metadata headers), and RabbitMQ challenge to tools', async () => {
    const navigation = {
      'Sec-Fetch-Site': 'none',
      'Sec-Fetch-Mode': 'navigate',
      'Sec-Fetch-Dest': 'document',
    };
    const wrong = `Basic ${Buffer.from('guest:nope').toString('base64')}`;
    for (const headers of [
      navigation,
      { ...navigation, Authorization: wrong },
      { 'Sec-Fetch-Dest': 'empty' },
    ]) {
      const reply = await raw('GET', '/api/overview', headers);
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBeUndefined();
    }
    const tool = await raw('GET', '/api/overview', {});
    expect([tool.status, tool.headers['www-authenticate']]).toEqual([401, 'Basic realm="Styx Management"']);
  });
});

describe('the Host allow-list', () => {
  it('refuses a Host that is not a name of the listener with 421, before authentication', async () => {
    await startServer();
    for (const host of [
      `evil.example:${port}`,
      'evil.example',
      `127.0.0.2.nip.io:${port}`,
      'localhost.evil',
    ]) {
      for (const path of ['/api/overview', '/metrics', '/', '/console/session']) {
        const reply = await raw('GET', path, { Host: host, Authorization: GUEST_AUTH });
        expect([host, path, reply.status, reply.body?.error]).toEqual([
          host,
          path,
          421,
          'misdirected_request',
        ]);
        expect(reply.body?.reason).toContain('--management-hostname');
      }
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST.:${port}`,
      `[::1]:${port}`,
      'localhost',
    ]) {
      expect([
        host,
        (await raw('GET', '/api/whoami', { Host: host, Authorization: GUEST_AUTH })).status,
      ]).toEqual([host, 200]);
    }
  });

  it('answers to the names given with --management-hostname as well', async () => {
    await startServer({ hostnames: ['styx.example.com', 'Proxy.Internal'] });
    for (const host of ['styx.example.com', 'styx.example.com:443', 'proxy.internal:8080']) {
      expect((await raw('GET', '/api/whoami', { Host: host, Authorization: GUEST_AUTH })).status).toBe(200);
    }
    expect(
      (await raw('GET', '/api/whoami', { Host: 'other.example.com', Authorization: GUEST_AUTH })).status,
    ).toBe(421);
  });
});

describe('/metrics', () => {
  it('is open by default, as RabbitMQ Prometheus endpoint', async () => {
    await startServer();
    const reply = await fetch(`${base}/metrics`);
    expect(reply.status).toBe(200);
    expect(await reply.text()).toContain('styx_');
  });

  it('asks for basic auth of a monitoring or administrator user with metricsAuth', async () => {
    await startServer({ metricsAuth: true });
    const json = { Authorization: GUEST_AUTH, 'Content-Type': 'application/json' };
    await raw('PUT', '/api/users/mon', json, '{"password":"mon","tags":"monitoring"}');
    await raw('PUT', '/api/users/mgmt', json, '{"password":"mgmt","tags":"management"}');
    const as = (user: string) => `Basic ${Buffer.from(`${user}:${user}`).toString('base64')}`;
    const anonymous = await raw('GET', '/metrics', {});
    expect([anonymous.status, anonymous.headers['www-authenticate']]).toEqual([
      401,
      'Basic realm="Styx Management"',
    ]);
    expect((await raw('GET', '/metrics', { Authorization: as('mgmt') })).status).toBe(403);
    expect(
      (await raw('GET', '/metrics', { Authorization: `Basic ${Buffer.from('mon:x').toString('base64')}` }))
        .status,
    ).toBe(401);
    for (const auth of [as('mon'), GUEST_AUTH]) {
      const reply = await raw('GET', '/metrics', { Authorization: auth });
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    }
  });
});
