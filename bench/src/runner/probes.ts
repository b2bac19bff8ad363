/**
 * Capability probes: a tiny exercise of a feature a case needs, run once per broker before the
 * first case that needs it. A broker that fails the probe gets 'unsupported' for those cases
 * instead of a stall or a failed run.
 */
import type { BrokerAdapter } from '../adapters/adapter.ts';
import type { BrokerUnderTest, Target } from '../brokers/broker.ts';
import type { Requirement } from '../scenarios/scenario.ts';
import { BodyWriter } from '../scenarios/support/body.ts';
import { nowMs } from '../scenarios/support/clock.ts';
import { startConsumer } from '../scenarios/support/consumer.ts';
import { deadLetterTopology } from '../scenarios/support/dead-letter-setup.ts';
import { waitUntil } from '../scenarios/support/wait.ts';
import { TrackedCaseContext } from './case-context.ts';

/** How long a probe waits for its dead-lettered message, ms. */
const PROBE_WAIT_MS = 5000;
/** TTL of the probe's expiring message, ms. */
const PROBE_TTL_MS = 50;

/** A probe's verdict: undefined when supported, else why not. */
export type ProbeVerdict = string | undefined;

/**
 * Columns whose broker has, through another column, every feature the cases probe for: a failed
 * probe there is a gap in that column's client path, so the case fails (and with it the run's exit
 * code) rather than being reported unsupported beside the other columns' numbers.
 */
const GAPS_ARE_ERRORS: Readonly<Partial<Record<Target, string>>> = {
  'styx-amqp': "Styx's AMQP path lacks what this case needs (Styx has it through the SDK)",
};

/** How a case whose probe failed with `why` is reported on `target`. */
export function unmetRequirement(
  target: Target,
  why: string,
): { readonly status: 'unsupported' | 'error'; readonly reason: string } {
  const gap = GAPS_ARE_ERRORS[target];
  return gap === undefined
    ? { status: 'unsupported', reason: why }
    : { status: 'error', reason: `${gap}: ${why}` };
}

export function requirementKey(r: Requirement): string {
  return `${r.kind}:${r.reason}:${r.strategy}`;
}

async function deadLetterVerdict(
  broker: BrokerUnderTest,
  adapter: BrokerAdapter,
  r: Requirement,
): Promise<ProbeVerdict> {
  const ctx = new TrackedCaseContext(
    broker,
    adapter,
    `probe-${r.reason}-${r.strategy}`,
    PROBE_WAIT_MS,
    () => {},
  );
  try {
    const topo = await deadLetterTopology(ctx, {
      strategy: r.strategy,
      count: 1,
      ...(r.reason === 'expired' ? { messageTtlMs: PROBE_TTL_MS } : {}),
    });
    if (r.reason === 'rejected')
      await startConsumer(await ctx.connect(), topo.source, 1, (msg, ch) => ch.reject(msg, false));
    const ch = await (await ctx.connect()).createConfirmChannel();
    ch.publish('', topo.source, new BodyWriter().stamp(0, nowMs()), { persistent: true });
    await ch.waitForConfirms();
    await waitUntil(() => topo.arrivals.complete, {
      what: 'dead-lettered messages',
      progress: () => topo.arrivals.unique,
      expected: 1,
      stallMs: PROBE_WAIT_MS,
    });
    return undefined;
  } catch (err) {
    return `dead-lettering of ${r.reason} messages (${r.strategy}) failed its probe: ${(err as Error).message}`;
  } finally {
    await ctx.dispose();
  }
}

/** Runs (once per broker instance) and remembers the probes of a broker's requirements. */
export class ProbeCache {
  readonly #verdicts = new Map<string, ProbeVerdict>();
  readonly #broker: BrokerUnderTest;
  readonly #adapter: BrokerAdapter;

  constructor(broker: BrokerUnderTest, adapter: BrokerAdapter) {
    this.#broker = broker;
    this.#adapter = adapter;
  }

  /** The first unmet requirement's reason, or undefined when all are met. */
  async check(requirements: readonly Requirement[]): Promise<ProbeVerdict> {
    for (const r of requirements) {
      const key = requirementKey(r);
      if (!this.#verdicts.has(key))
        this.#verdicts.set(key, await deadLetterVerdict(this.#broker, this.#adapter, r));
      const verdict = this.#verdicts.get(key);
      if (verdict !== undefined) return verdict;
    }
    return undefined;
  }
}
