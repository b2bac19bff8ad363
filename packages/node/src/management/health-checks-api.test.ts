// RabbitMQ's health checks as probes call them: 200 {"status":"ok"} when the check passes, 503
// {"status":"failed","reason":...} with RabbitMQ's details when it fails; a local resource alarm
// fails both alarm checks; /api/nodes shows the node's resources and alarms under RabbitMQ's names.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManagementHarness } from './test-support/management-harness.ts';

describe('health checks of a node without alarms', () => {
  let h: ManagementHarness;
  let port: number;
  beforeAll(async () => {
    h = await ManagementHarness.start('health-ok');
    port = Number(new URL(h.server.url as string).port);
  });
  afterAll(() => h.stop());

  it('answers 200 {"status":"ok"} to the alarm, vhost and service checks', async () => {
    for (const check of ['alarms', 'local-alarms', 'virtual-hosts', 'is-in-service']) {
      expect(await h.api('GET', `/api/health/checks/${check}`), check).toEqual({
        status: 200,
        body: { status: 'ok' },
      });
    }
  });

  it('checks a port and a protocol against the active listeners', async () => {
    expect(await h.api('GET', `/api/health/checks/port-listener/${port}`)).toEqual({
      status: 200,
      body: { status: 'ok', port },
    });
    const other = port === 1 ? 2 : 1;
    expect(await h.api('GET', `/api/health/checks/port-listener/${other}`)).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'No active listener', missing: other, ports: [port] },
    });
    expect((await h.api('GET', '/api/health/checks/port-listener/http')).status).toBe(400);
    expect((await h.api('GET', '/api/health/checks/port-listener/70000')).status).toBe(400);
    // RabbitMQ's names of the management listener.
    for (const name of ['http', 'management', 'HTTP_API']) {
      expect(await h.api('GET', `/api/health/checks/protocol-listener/${name}`)).toEqual({
        status: 200,
        body: { status: 'ok', protocol: 'http' },
      });
    }
    expect(await h.api('GET', '/api/health/checks/protocol-listener/amqp091')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'No active listener', missing: 'amqp', protocols: ['http'] },
    });
  });

  it('is ready to serve clients once a client listener is active', async () => {
    expect(await h.api('GET', '/api/health/checks/ready-to-serve-clients')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'this node has no active client listener' },
    });
    const remove = h.broker.listeners.add({ protocol: 'styx', host: '127.0.0.1', port: 5999 });
    expect(await h.api('GET', '/api/health/checks/ready-to-serve-clients')).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    expect((await h.api('GET', '/api/health/checks/protocol-listener/websocket')).status).toBe(200);
    remove();
  });

  it('lets any management user probe, and nobody without a management tag', async () => {
    const viewer = await h.makeUser('viewer', ['management']);
    const none = await h.makeUser('app', []);
    expect((await h.api('GET', '/api/health/checks/alarms', undefined, viewer)).status).toBe(200);
    expect((await h.api('GET', '/api/health/checks/alarms', undefined, none)).status).toBe(403);
  });

  it("shows the node's resources under RabbitMQ's names in /api/nodes", async () => {
    const [node] = (await h.api('GET', '/api/nodes')).body as Record<string, unknown>[];
    expect(node).toMatchObject({
      mem_limit: 0,
      mem_alarm: false,
      // No data directory (everything in memory): no disk is watched.
      disk_free: null,
      disk_free_limit: null,
      disk_free_alarm: false,
      sockets_used: 0,
    });
    expect(node?.mem_used).toBeGreaterThan(0);
    // Linux: /proc tells the descriptors.
    expect(node?.fd_used).toBeGreaterThan(0);
    expect(node?.fd_total).toBeGreaterThanOrEqual(node?.fd_used as number);
    expect(node?.sockets_total).toBe(node?.fd_total);
  });
});

describe('health checks of a node with a resource alarm', () => {
  let h: ManagementHarness;
  beforeAll(async () => {
    // A 1-byte memory budget: the memory alarm is raised at the first check (within a second).
    h = await ManagementHarness.start('health-alarm', { memoryBudgetBytes: 1 });
  });
  afterAll(() => h.stop());

  it('fails the cluster and local alarm checks with 503 and the alarms in effect', async () => {
    await vi.waitFor(() => expect(h.broker.resources.memoryAlarm).toBe(true), { timeout: 5_000 });
    const alarms = [{ node: 'health-alarm', resource: 'memory' }];
    expect(await h.api('GET', '/api/health/checks/alarms')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'There are alarms in effect in the cluster', alarms },
    });
    expect(await h.api('GET', '/api/health/checks/local-alarms')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'There are alarms in effect on the node', alarms },
    });
    // The other checks do not depend on alarms.
    expect((await h.api('GET', '/api/health/checks/is-in-service')).status).toBe(200);
    const [node] = (await h.api('GET', '/api/nodes')).body as Record<string, unknown>[];
    expect(node).toMatchObject({ mem_limit: 1, mem_alarm: true, disk_free_alarm: false });
  });
});
