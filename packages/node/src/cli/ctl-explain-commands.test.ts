import type { FieldValue } from '@styx/client/wire';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManagementHarness } from '../management/test-support/management-harness.ts';
import type { CtlRun } from './test-support/ctl-run.ts';
import { runCtl } from './test-support/ctl-run.ts';

let harness: ManagementHarness;

beforeEach(async () => {
  harness = await ManagementHarness.start('ctl-explain');
});

afterEach(async () => {
  await harness.stop();
});

function ctl(...argv: string[]): Promise<CtlRun> {
  return runCtl(harness.server.url as string, argv);
}

async function declare(name: string, args: Record<string, FieldValue>, vhost = '/'): Promise<void> {
  await harness.broker.declareQueue(
    { user: 'guest', vhost, connectionId: 'c1' },
    {
      queue: name,
      passive: false,
      durable: true,
      exclusive: false,
      autoDelete: false,
      arguments: { entries: Object.entries(args).map(([key, value]) => ({ key, value })) },
    },
  );
}

describe('styx ctl explain_dead_lettering', () => {
  it("prints each setting's source, the routes, each reason with its cycles, and the warnings", async () => {
    // The guide's cycle: dead-lettered to the default exchange without a routing key.
    await declare('work', { 'x-dead-letter-exchange': { longStr: '' }, 'x-message-ttl': { i32: 500 } });
    const run = await ctl('explain_dead_lettering', 'work');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const out = run.stdout;
    expect(out).toContain('Explaining dead-lettering for queue work in vhost / ...');
    expect(out).toContain(
      "dead-letter-exchange    '' (default exchange) (direct, exists)  (from the queue argument)",
    );
    expect(out).toContain(
      "dead-letter-routing-key none: each message's own routing keys (incl. CC and BCC)  (default)",
    );
    expect(out).toContain('dead-letter-strategy    at-least-once  (default)');
    expect(out).toContain('message-ttl             500 ms  (from the queue argument)');
    expect(out).toContain("key 'work' (published to the queue by name) -> work");
    expect(out).toContain('cycle work (expired) -> work: DROPPED there (no rejection in it)');
    expect(out).toContain('cycle work (rejected) -> work: kept (a rejection is in it)');
    expect(out).toMatch(/maxlen {10}cannot happen: the queue has no length limit/);
    expect(out).toContain('WARNING cycle_without_reject: cycle without a rejection: work (expired) -> work');
    expect(out).toContain('INFO    at_least_once_overflow:');
  });

  it("prints the node's JSON with --formatter json, in the vhost given with -p", async () => {
    await harness.broker.manage({ type: 'addVhost', name: 'v1' });
    await harness.broker.manage({
      type: 'setPermissions',
      user: 'guest',
      vhost: 'v1',
      configure: '.*',
      write: '.*',
      read: '.*',
    });
    await declare('q', { 'x-dead-letter-exchange': { longStr: 'missing' } }, 'v1');
    const run = await ctl('explain_dead_lettering', 'q', '-p', 'v1', '--formatter', 'json');
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout) as { vhost: string; warnings: { code: string }[] };
    expect(body.vhost).toBe('v1');
    expect(body.warnings.map((w) => w.code)).toContain('dead_letter_exchange_missing');
    const text = await ctl('explain_dead_lettering', '--vhost', 'v1', 'q');
    expect(text.stdout).toContain("'missing' (DOES NOT EXIST)");
    expect(text.stdout).toContain('ERROR   dead_letter_exchange_missing');
  });

  it('says "No warnings." for a sound topology, and "none" for what is not set', async () => {
    await declare('dlq', {});
    await declare('work', {
      'x-dead-letter-exchange': { longStr: '' },
      'x-dead-letter-routing-key': { longStr: 'dlq' },
      'x-overflow': { longStr: 'reject-publish' },
    });
    const run = await ctl('explain_dead_lettering', 'work');
    expect(run.stdout).toContain("key 'dlq' (the dead-letter routing key) -> dlq");
    expect(run.stdout).toContain(
      "rejected        dead-lettered at-least-once to '(default exchange)' with key 'dlq'",
    );
    expect(run.stdout).toContain('No warnings.');
    const plain = await ctl('explain_dead_lettering', 'dlq');
    expect(plain.stdout).toContain('dead-letter-routing-key none  (default)');
    expect(plain.stdout).toContain('rejected        dropped: the queue has no dead-letter exchange');
  });

  it('fails for an unknown queue (exit 1) and without a queue (usage, exit 2); has --help', async () => {
    const missing = await ctl('explain_dead_lettering', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("no queue 'nope' in vhost '/'");
    const usage = await ctl('explain_dead_lettering');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('explain_dead_lettering takes 1 argument');
    const help = await ctl('explain_dead_lettering', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('explain what happens right now to a message leaving QUEUE');
  });
});
