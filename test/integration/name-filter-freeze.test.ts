import type { ConfirmChannel, Connection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { WAIT_MS, withTimeout } from './messaging-helpers.ts';

// Issue 25: `GET /api/queues?name=(a+)+$&use_regex=true` over 10,000 queues named `…aaaa!` ran the
// pattern on V8's backtracking engine, 2^28 steps a name: the node's event loop stopped, and with
// it the confirms of every publisher (and the Raft heartbeats). On a real `styx server`, a client
// publishing with confirms beside such requests must see no confirm delayed by more than 100 ms
// beyond what a confirm costs on the same machine without the filters.

const QUEUES = 10_000;
/** Queues declared at once (each is a metadata command and a queue group). */
const DECLARE_WINDOW = 250;
const PROBE = 'probe';
const FILTER = `/api/queues?page=1&page_size=10&name=${encodeURIComponent('(a+)+$')}&use_regex=true`;
/** The bound the issue sets on a confirm's delay while the filter runs. */
const MAX_CONFIRM_MS = 100;

let broker: BrokerProcess;
let conn: Connection;
let ch: ConfirmChannel;

/** A name the pattern backtracks on: a run of 28 'a' and a '!' that makes `$` fail at every split. */
function victim(i: number): string {
  return `${i}-${'a'.repeat(28)}!`;
}

async function filterRequest(): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${broker.managementUrl as string}${FILTER}`, {
    headers: { Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, body: await response.json() };
}

beforeAll(async () => {
  broker = await startBroker({ management: true });
  conn = await withTimeout(amqp.connect(broker.url), WAIT_MS, 'connect');
  conn.on('error', () => undefined);
  ch = await conn.createConfirmChannel();
  for (let from = 0; from < QUEUES; from += DECLARE_WINDOW) {
    const batch: Promise<unknown>[] = [];
    for (let i = from; i < Math.min(QUEUES, from + DECLARE_WINDOW); i++) {
      batch.push(ch.assertQueue(victim(i), { durable: true }));
    }
    await withTimeout(Promise.all(batch), 60_000, `declare queues from ${from}`);
  }
  await ch.assertQueue(PROBE, { durable: true });
}, 600_000);

afterAll(async () => {
  await conn?.close().catch(() => undefined);
  await broker?.kill();
  await broker?.cleanup();
});

/**
 * Publish one message at a time with confirms until `until` settles; the latency of each confirm
 * (ms), and how many were confirmed while `until` was pending.
 */
async function confirmLatencies(
  until: () => Promise<unknown>,
): Promise<{ latencies: number[]; during: number }> {
  const latencies: number[] = [];
  let publishing = true;
  const publisher = (async () => {
    while (publishing) {
      const start = performance.now();
      ch.sendToQueue(PROBE, Buffer.from('tick'));
      await withTimeout(ch.waitForConfirms(), WAIT_MS, 'a confirm');
      latencies.push(performance.now() - start);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const before = latencies.length;
  await until();
  const during = latencies.length - before;
  await new Promise((resolve) => setTimeout(resolve, 300));
  publishing = false;
  await publisher;
  return { latencies, during };
}

/** How long the filters keep running beside the publisher, at least, ms. */
const FILTER_WINDOW_MS = 1_000;

describe('a catastrophic name filter beside a publisher with confirms', () => {
  it('delays no confirm by more than 100 ms while filters run over 10,000 queue names', async () => {
    // The same publisher without filters first: what a confirm costs on this (shared, loaded) machine
    // anyway — an fsync under a parallel test suite alone can take tens of ms. The filters may add at
    // most MAX_CONFIRM_MS to the worst of it (the old code added seconds: confirms stopped).
    let replies: { status: number; body: unknown }[] = [];
    const filterStart = performance.now();
    const measured = await confirmLatencies(async () => {
      // Three at once, as a console tab and two scripts would, round after round for at least
      // FILTER_WINDOW_MS: a round can end before a single confirm's round trip, which would leave
      // the publisher nothing to show for the window.
      const deadline = performance.now() + FILTER_WINDOW_MS;
      do {
        replies = await Promise.all([filterRequest(), filterRequest(), filterRequest()]);
      } while (performance.now() < deadline);
    });
    const filterMs = performance.now() - filterStart;
    const control = await confirmLatencies(
      () => new Promise((resolve) => setTimeout(resolve, Math.max(500, filterMs - 600))),
    );
    for (const reply of replies) {
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ filtered_count: 0, total_count: QUEUES + 1 });
    }
    expect(measured.during).toBeGreaterThan(0);
    expect(Math.max(...measured.latencies)).toBeLessThan(Math.max(...control.latencies) + MAX_CONFIRM_MS);
  }, 120_000);
});
