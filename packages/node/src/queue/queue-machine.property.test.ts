/**
 * Seeded random command sequences against the queue machine: the incremental counts equal a full
 * recount after every step (the harness checks it on each apply), and a machine restored from a
 * snapshot taken at any point, then fed the rest of the log, behaves exactly as the full replay.
 * The sequences include both dead-letter strategies, settles of pending hand-offs (and of ids
 * that are not pending), hand-off enqueues sent again, and a small pending cap that is reached.
 */

import type { EntryMeta } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { QueueSnapshotError } from './errors.ts';
import type { QueueMachineOptions } from './queue-machine.ts';
import { QueueMachine } from './queue-machine.ts';
import { MachineHarness, queueConfig, storedMessage } from './queue-test-harness.ts';
import type { OverflowMode, QueueApplyResult, QueueCommand, QueueConfig } from './types.ts';

/** mulberry32: a small deterministic PRNG, so a failing seed can be replayed. */
class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(bound: number): number {
    return Math.floor(this.next() * bound);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(values: readonly T[]): T {
    return values[this.int(values.length)] as T;
  }
}

const OWNERS = ['conn-a/1', 'conn-a/2', 'conn-b/1'];
const TAGS = ['t1', 't2'];
const OVERFLOWS: readonly OverflowMode[] = ['drop-head', 'reject-publish', 'reject-publish-dlx'];
const STRATEGIES: readonly QueueConfig['deadLetterStrategy'][] = ['at-most-once', 'at-least-once'];
/** Small enough that random runs fill it; the same for every machine of a run. */
const OPTIONS: QueueMachineOptions = {
  pendingLimits: { maxMessages: 6, maxBytes: 400 },
  dedupeLimits: { maxIdsPerSource: 4, maxSources: 2 },
};
const SOURCES = ['src-a', 'src-b', 'src-c'];

function maybe<T>(rng: Rng, p: number, value: () => T): T | undefined {
  return rng.chance(p) ? value() : undefined;
}

function randomConfig(rng: Rng): QueueConfig {
  return queueConfig({
    messageTtl: maybe(rng, 0.4, () => rng.int(200)),
    expires: maybe(rng, 0.3, () => 50 + rng.int(500)),
    maxLength: maybe(rng, 0.4, () => rng.int(8)),
    maxLengthBytes: maybe(rng, 0.3, () => rng.int(400)),
    overflow: rng.pick(OVERFLOWS),
    deliveryLimit: maybe(rng, 0.4, () => rng.int(4)),
    deadLetterExchange: maybe(rng, 0.5, () => 'dlx'),
    deadLetterStrategy: rng.pick(STRATEGIES),
  });
}

interface Step {
  readonly command: QueueCommand;
  readonly meta: EntryMeta;
  readonly result: QueueApplyResult;
}

interface Run {
  readonly initialConfig: QueueConfig;
  readonly steps: Step[];
  /** snapshots[k] = the reference's snapshot after k steps. */
  readonly snapshots: Uint8Array[];
}

/** Which ids each owner may hold, learnt from the results (may be stale: that is fine). */
class Holdings {
  private readonly held = new Map<string, number[]>();
  learn(result: QueueApplyResult, command: QueueCommand): void {
    for (const effect of result.effects) {
      if (effect.type === 'deliver') this.add(effect.owner, effect.id);
    }
    if (command.type === 'get' && !command.noAck && result.reply.type === 'got') {
      this.add(command.owner, result.reply.id);
    }
    for (const effect of result.effects) {
      if (effect.type === 'deadLetterHandOff') this.pending.push(...effect.ids);
    }
  }
  /** Ids that became pending (some may be settled already: settling them again is a no-op). */
  readonly pending: number[] = [];
  pickPending(rng: Rng): number[] {
    const picked: number[] = [];
    const count = 1 + rng.int(3);
    for (let i = 0; i < count && this.pending.length > 0; i++) {
      picked.push(this.pending.splice(rng.int(this.pending.length), 1)[0] as number);
    }
    if (rng.chance(0.1)) picked.push(1 + rng.int(1000));
    return picked;
  }
  pickIds(rng: Rng, owner: string): number[] {
    const ids = this.held.get(owner) ?? [];
    const picked: number[] = [];
    const count = 1 + rng.int(3);
    for (let i = 0; i < count && ids.length > 0; i++) {
      const at = rng.int(ids.length);
      picked.push(ids[at] as number);
      ids.splice(at, 1);
    }
    if (rng.chance(0.1)) picked.push(1 + rng.int(1000));
    return picked;
  }
  private add(owner: string, id: number): void {
    let ids = this.held.get(owner);
    if (ids === undefined) {
      ids = [];
      this.held.set(owner, ids);
    }
    ids.push(id);
  }
}

function randomCommand(rng: Rng, holdings: Holdings): QueueCommand {
  const roll = rng.int(100);
  const owner = rng.pick(OWNERS);
  if (roll < 30) {
    const size = rng.int(100);
    const ttl = rng.chance(0.6) ? undefined : rng.chance(0.2) ? 0 : rng.int(150);
    // Some are hand-offs, with ids drawn from a small range so repeats (duplicates) happen.
    const handOff = rng.chance(0.25)
      ? { source: rng.pick(SOURCES), messageId: rng.int(12), horizon: rng.int(6) }
      : undefined;
    return { type: 'enqueue', size, ttl, message: storedMessage(size), handOff };
  }
  if (roll < 38) {
    return {
      type: 'consume',
      owner,
      tag: rng.pick(TAGS),
      prefetch: rng.int(4),
      noAck: rng.chance(0.2),
      exclusive: rng.chance(0.05),
    };
  }
  if (roll < 43) return { type: 'cancel', owner, tag: rng.pick(TAGS) };
  if (roll < 58) return { type: 'settle', owner, ids: holdings.pickIds(rng, owner) };
  if (roll < 68) return { type: 'return', owner, ids: holdings.pickIds(rng, owner) };
  if (roll < 73) return { type: 'discard', owner, ids: holdings.pickIds(rng, owner) };
  if (roll < 80) return { type: 'get', owner, noAck: rng.chance(0.3) };
  if (roll < 88) return { type: 'expire' };
  if (roll < 89) return { type: 'purge' };
  if (roll < 93) return { type: 'ownerDown', owner };
  if (roll < 95) return { type: 'touch' };
  if (roll < 98) return { type: 'deadLetterSettled', ids: holdings.pickPending(rng) };
  return { type: 'setConfig', config: randomConfig(rng) };
}

/** Run `length` random commands on a reference machine, keeping every snapshot. */
function referenceRun(seed: number, length: number): Run {
  const rng = new Rng(seed);
  const initialConfig = randomConfig(rng);
  const h = new MachineHarness(initialConfig, undefined, OPTIONS);
  const holdings = new Holdings();
  const steps: Step[] = [];
  const snapshots: Uint8Array[] = [h.machine.snapshot()];
  for (let i = 0; i < length; i++) {
    h.advance(rng.chance(0.3) ? 0 : rng.int(40));
    const command = randomCommand(rng, holdings);
    const meta = h.nextMeta();
    const result = h.apply(command);
    holdings.learn(result, command);
    steps.push({ command, meta, result });
    snapshots.push(h.machine.snapshot());
  }
  return { initialConfig, steps, snapshots };
}

const SEEDS = Array.from({ length: 40 }, (_, i) => 1000 + i);
const LENGTH = 400;

describe('QueueMachine random command sequences', () => {
  it.each(SEEDS)('keeps counts equal to a recount after every step (seed %i)', (seed) => {
    // MachineHarness.apply throws when counts() and recount() differ or an invariant breaks.
    const run = referenceRun(seed, LENGTH);
    expect(run.steps).toHaveLength(LENGTH);
  });

  it('exercises every kind of effect across the seeds', () => {
    const seen = new Set<string>();
    for (const seed of SEEDS) {
      for (const step of referenceRun(seed, LENGTH).steps) {
        for (const effect of step.result.effects) {
          seen.add(effect.type === 'deadLetter' ? `deadLetter:${effect.reason}` : effect.type);
        }
        const { reply } = step.result;
        seen.add(reply.type === 'rejected' ? `reply:rejected:${reply.reason}` : `reply:${reply.type}`);
      }
    }
    expect([...seen].sort()).toEqual(
      [
        'cancelTimer',
        'deadLetter:delivery_limit',
        'deadLetter:expired',
        'deadLetter:maxlen',
        'deadLetter:rejected',
        'deadLetterRejected',
        'deadLetterHandOff',
        'deliver',
        'expired',
        'queueExpired',
        'reply:duplicate',
        'reply:empty',
        'reply:got',
        'reply:locked',
        'reply:ok',
        'reply:purged',
        'reply:rejected:maxlen',
        'reply:rejected:dead-letter-backlog',
        'timer',
      ].sort(),
    );
  });

  it.each(SEEDS)('restored from a snapshot at any point, replays like the full log (seed %i)', (seed) => {
    const run = referenceRun(seed, LENGTH);
    const rng = new Rng(seed ^ 0x5eed);
    const cuts = [0, LENGTH, rng.int(LENGTH + 1), rng.int(LENGTH + 1), rng.int(LENGTH + 1)];
    for (const cut of cuts) {
      // Replaying the prefix on a fresh machine gives the same snapshot bytes (determinism).
      const replayed = new QueueMachine(run.initialConfig, OPTIONS);
      for (const step of run.steps.slice(0, cut)) replayed.apply(step.command, step.meta);
      const snapshot = replayed.snapshot();
      expect(snapshot).toEqual(run.snapshots[cut]);

      // A machine built with another config, restored from it, continues identically.
      const restored = new QueueMachine(undefined, OPTIONS);
      const cutMeta = cut === 0 ? { index: 0, term: 1, ts: 0 } : (run.steps[cut - 1] as Step).meta;
      restored.restore(snapshot, cutMeta);
      expect(restored.snapshot()).toEqual(snapshot);
      expect(restored.lastAppliedIndex).toBe(cutMeta.index);
      for (let k = cut; k < run.steps.length; k++) {
        const step = run.steps[k] as Step;
        expect(restored.apply(step.command, step.meta), `step ${k} after cut ${cut}`).toEqual(step.result);
        expect(restored.recount()).toEqual(restored.counts());
      }
      expect(restored.snapshot()).toEqual(run.snapshots[LENGTH]);
    }
  });
});

describe('QueueMachine snapshots', () => {
  it('holds no bodies: snapshot size does not grow with body size', () => {
    const small = new MachineHarness();
    const large = new MachineHarness();
    for (let i = 0; i < 10; i++) {
      small.apply({ type: 'enqueue', size: 1, ttl: undefined, message: storedMessage(1) });
      large.apply({ type: 'enqueue', size: 1, ttl: undefined, message: storedMessage(100_000) });
    }
    expect(large.machine.snapshot().length).toBe(small.machine.snapshot().length);
    expect(small.machine.snapshot().length).toBeLessThan(400);
  });

  it('rejects a truncated snapshot, trailing bytes and an unknown version', () => {
    const h = new MachineHarness();
    h.enqueueMany(3);
    h.consume('o/1', 't', { prefetch: 1 });
    const bytes = h.machine.snapshot();
    const meta = { index: 1, term: 1, ts: 0 };
    expect(() => new QueueMachine().restore(bytes.subarray(0, bytes.length - 1), meta)).toThrow(
      QueueSnapshotError,
    );
    expect(() => new QueueMachine().restore(new Uint8Array([...bytes, 0]), meta)).toThrow(QueueSnapshotError);
    expect(() => new QueueMachine().restore(new Uint8Array([99, ...bytes.subarray(1)]), meta)).toThrow(
      QueueSnapshotError,
    );
  });
});
