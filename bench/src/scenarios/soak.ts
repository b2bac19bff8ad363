/**
 * m. Soak: K cycles of publishing M messages with confirms into one queue and draining them (consume
 * + ack), with the broker's resident memory sampled throughout (node 1's process, from
 * /proc/<pid>/smaps_rollup: total, anonymous, and file-backed = the rest, e.g. LMDB's map). Memory
 * that keeps climbing from cycle to cycle is a leak; file-backed pages the kernel may reclaim.
 * Charted in soak.svg.
 */
import type { ResidentMemory } from '../brokers/process-stats.ts';
import { processMemoryRollup } from '../brokers/process-stats.ts';
import type { Scenario, TimeSeries } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { ArrivalRecorder } from './support/arrivals.ts';
import { nowMs } from './support/clock.ts';
import { startConsumer } from './support/consumer.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { publishWithConfirms } from './support/publisher.ts';
import { waitUntil } from './support/wait.ts';

/** How often memory is sampled, ms. */
export const SOAK_SAMPLE_MS = 250;
const MIB = 2 ** 20;

export const soak: Scenario = {
  id: 'm',
  name: 'soak',
  title: 'Soak: publish/drain cycles, memory over time',
  cases: (sizes) => [
    {
      id: 'm.soak',
      scenario: 'm',
      title: `${sizes.soakCycles} cycles of ${sizes.soakMessages / 1000}k`,
      params: { cycles: sizes.soakCycles, messagesPerCycle: sizes.soakMessages, sampleMs: SOAK_SAMPLE_MS },
      requires: [],
      freshBroker: true,
      async run(ctx) {
        const k = sizes.soakCycles;
        const m = sizes.soakMessages;
        const queue = await ctx.declareQueue('q');
        const pubCh = await (await ctx.connect()).createConfirmChannel();
        const consumerConn = await ctx.connect();
        const t0 = nowMs();
        const samples: { t: number; mem: ResidentMemory }[] = [];
        const sample = (): void => {
          const mem = processMemoryRollup(ctx.brokerPid);
          if (mem !== undefined) samples.push({ t: (nowMs() - t0) / 1000, mem });
        };
        sample();
        const sampler = setInterval(sample, SOAK_SAMPLE_MS);
        const afterCycle: number[] = [];
        const window = openCpuWindow(ctx);
        try {
          for (let c = 0; c < k; c++) {
            ctx.status(`cycle ${c + 1}/${k}: publishing`);
            await publishWithConfirms(pubCh, {
              exchange: '',
              routingKey: queue,
              count: m,
              window: 1000,
              firstSeq: 0,
            });
            ctx.status(`cycle ${c + 1}/${k}: draining`);
            const arrivals = new ArrivalRecorder(m);
            const consumer = await startConsumer(consumerConn, queue, 1000, (msg, ch) => {
              arrivals.record(msg.content);
              ch.ack(msg);
            });
            await waitUntil(() => arrivals.complete, {
              what: 'messages drained',
              progress: () => arrivals.unique,
              expected: m,
              stallMs: ctx.stallTimeoutMs,
            });
            await consumer.channel.close();
            sample();
            afterCycle.push(samples.at(-1)?.mem.rss ?? 0);
          }
        } finally {
          clearInterval(sampler);
        }
        const elapsedMs = nowMs() - t0;
        const cpu = window.close(2 * k * m);
        const series = (key: string, label: string, pick: (r: ResidentMemory) => number): TimeSeries => ({
          key,
          label,
          unit: 'MiB',
          points: samples.map((s) => ({ x: s.t, y: pick(s.mem) / MIB })),
        });
        const first = afterCycle[0] ?? 0;
        const last = afterCycle.at(-1) ?? 0;
        const peak = Math.max(...samples.map((s) => s.mem.rss));
        return {
          metrics: withCpuFirst(cpu, [
            {
              key: 'throughput',
              label: 'published + drained',
              unit: 'msg/s',
              value: perSecond(2 * k * m, elapsedMs),
              better: 'higher',
            },
            { key: 'rss-peak', label: 'RSS peak', unit: 'MiB', value: peak / MIB, better: 'lower' },
            {
              key: 'rss-end',
              label: 'RSS after the last cycle',
              unit: 'MiB',
              value: last / MIB,
              better: 'lower',
            },
            {
              key: 'rss-growth',
              label: 'RSS growth, first → last cycle',
              unit: 'MiB',
              value: (last - first) / MIB,
              better: 'lower',
            },
          ]),
          histograms: [],
          series: [
            series('rss', 'RSS', (r) => r.rss),
            series('anon', 'anonymous memory', (r) => r.anon),
            series('file', 'file-backed memory', (r) => r.file),
          ],
          notes: [`broker CPU per message counts each message twice (published, then drained)`],
        };
      },
    },
  ],
};
