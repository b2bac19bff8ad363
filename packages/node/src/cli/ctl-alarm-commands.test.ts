// styx ctl alarms | check_alarms | check_local_alarms | check_port_listener | check_protocol_listener
// against a real node's management API: exit 0 when the check passes, 1 (what failed on stderr)
// when a resource alarm is in effect or no listener matches.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManagementHarness } from '../management/test-support/management-harness.ts';
import { runCtl } from './test-support/ctl-run.ts';

describe('styx ctl alarm and listener checks', () => {
  let ok: ManagementHarness;
  let alarmed: ManagementHarness;
  beforeAll(async () => {
    ok = await ManagementHarness.start('ctl-ok');
    // A 1-byte memory budget: the memory alarm is raised within a second.
    alarmed = await ManagementHarness.start('ctl-alarmed', { memoryBudgetBytes: 1 });
    await vi.waitFor(() => expect(alarmed.broker.resources.memoryAlarm).toBe(true), { timeout: 5_000 });
  });
  afterAll(async () => {
    await ok.stop();
    await alarmed.stop();
  });

  it('passes without alarms and fails, naming them, with one', async () => {
    const url = ok.server.url as string;
    expect(await runCtl(url, ['check_alarms'])).toMatchObject({ code: 0 });
    expect(await runCtl(url, ['check_local_alarms'])).toMatchObject({ code: 0 });
    const bad = alarmed.server.url as string;
    const failed = await runCtl(bad, ['check_alarms']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('There are alarms in effect in the cluster');
    expect(failed.stderr).toContain('memory alarm on node ctl-alarmed');
    expect((await runCtl(bad, ['check_local_alarms'])).code).toBe(1);
    const listed = await runCtl(bad, ['alarms', '--formatter', 'json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([{ node: 'ctl-alarmed', resource: 'memory' }]);
  });

  it('checks listeners by port and protocol', async () => {
    const url = ok.server.url as string;
    const port = new URL(url).port;
    expect(await runCtl(url, ['check_port_listener', port])).toMatchObject({ code: 0 });
    expect(await runCtl(url, ['check_protocol_listener', 'management'])).toMatchObject({ code: 0 });
    const missing = await runCtl(url, ['check_protocol_listener', 'amqp']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No active listener for protocol amqp (active: http)');
    expect((await runCtl(url, ['check_port_listener', '1'])).code).toBe(1);
  });
});
