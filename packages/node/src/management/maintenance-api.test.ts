import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManagementHarness } from './test-support/management-harness.ts';

// The maintenance endpoints on a node alone: there is nothing to hand over to, so each answers 400
// (node-is-quorum-critical passes, as RabbitMQ's)
// (after checking who asks); the endpoints on a real cluster are in test/cluster/maintenance.test.ts.

let harness: ManagementHarness;

beforeEach(async () => {
  harness = await ManagementHarness.start('alone');
});

afterEach(async () => {
  await harness.stop();
});

const ENDPOINTS: readonly [string, string][] = [
  ['POST', '/api/nodes/alone/drain'],
  ['POST', '/api/nodes/alone/revive'],
  ['GET', '/api/nodes/alone/maintenance'],
  ['GET', '/api/health/checks/quorum-plus-one-online'],
];

describe('maintenance endpoints on a node without clustering', () => {
  it('answer 400: the node is not in a cluster', async () => {
    for (const [method, path] of ENDPOINTS) {
      const reply = await harness.api(method, path);
      expect(reply.status, `${method} ${path}`).toBe(400);
      expect(reply.body).toMatchObject({
        error: 'bad_request',
        reason: expect.stringMatching(/not in a cluster/),
      });
    }
  });

  it("pass node-is-quorum-critical with RabbitMQ's answer for a node alone", async () => {
    expect(await harness.api('GET', '/api/health/checks/node-is-quorum-critical')).toEqual({
      status: 200,
      body: { status: 'ok', reason: 'single node cluster', node: 'alone' },
    });
  });

  it('refuse changes to a monitoring user before anything else (403), and anyone without tags (401/403)', async () => {
    const watcher = await harness.makeUser('watcher', ['monitoring']);
    expect((await harness.api('POST', '/api/nodes/alone/drain', undefined, watcher)).status).toBe(403);
    expect((await harness.api('POST', '/api/nodes/alone/revive', undefined, watcher)).status).toBe(403);
    // Reads are allowed to monitoring: they get as far as the cluster check.
    expect((await harness.api('GET', '/api/nodes/alone/maintenance', undefined, watcher)).status).toBe(400);
    const plain = await harness.makeUser('plain', []);
    const refused = await harness.api('GET', '/api/health/checks/quorum-plus-one-online', undefined, plain);
    expect([401, 403]).toContain(refused.status);
  });

  it('answer unknown methods with 405', async () => {
    expect((await harness.api('GET', '/api/nodes/alone/drain')).status).toBe(405);
    expect((await harness.api('POST', '/api/health/checks/node-is-quorum-critical')).status).toBe(405);
  });
});
