// The dedupe window as a replicated parameter: a queue starts at 1,024 hand-off ids per source (what
// every build before it used) and takes another window only from a `setDedupeWindow` entry of its
// log, so replicas of different builds, and a log replayed by a newer build, dedupe alike.
import { DEFAULT_DEDUPE_LIMITS, MAX_DEDUPE_WINDOW, WIDE_DEDUPE_WINDOW } from '@styx/dlx';
import { describe, expect, it } from 'vitest';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import { QueueSnapshotError } from './errors.ts';
import { QueueMachine } from './queue-machine.ts';
import { MachineHarness, storedMessage } from './queue-test-harness.ts';
import type { QueueCommand, QueueReply } from './types.ts';

const LEGACY = DEFAULT_DEDUPE_LIMITS.maxIdsPerSource;
const SOURCE = 'src#1';

function handOff(messageId: number, horizon = 0): QueueCommand {
  return {
    type: 'enqueue',
    size: 1,
    ttl: undefined,
    message: storedMessage(1),
    handOff: { source: SOURCE, messageId, horizon },
  };
}

const widen = (maxIdsPerSource: number): QueueCommand => ({ type: 'setDedupeWindow', maxIdsPerSource });

/** Apply `commands` to a fresh machine (through the log's codec, as a replica replays them). */
function replay(commands: readonly QueueCommand[]): { machine: QueueMachine; replies: QueueReply[] } {
  const h = new MachineHarness();
  const replies = commands.map((c) => h.apply(queueCommandCodec.decode(queueCommandCodec.encode(c))).reply);
  return { machine: h.machine, replies };
}

describe('the dedupe window, set by the log', () => {
  it('starts at the window of every earlier build, whatever the node runs', () => {
    expect(new QueueMachine().dedupeWindow()).toBe(LEGACY);
  });

  for (const window of [LEGACY, WIDE_DEDUPE_WINDOW]) {
    it(`drops every repeat inside a ${window}-id window and lets the one just past its edge through`, () => {
      const log: QueueCommand[] = window === LEGACY ? [] : [widen(window)];
      // window + 1 hand-offs with no horizon (every one may still come again): id 1 is forgotten.
      for (let id = 1; id <= window + 1; id++) log.push(handOff(id));
      for (let id = 2; id <= window + 1; id++) log.push(handOff(id));
      log.push(handOff(1));
      const { machine, replies } = replay(log);
      const firsts = replies.slice(log.length - window - 1 - (window + 1), log.length - window - 1);
      expect(firsts.every((r) => r.type === 'ok')).toBe(true);
      const repeats = replies.slice(log.length - window - 1, log.length - 1);
      expect(repeats).toHaveLength(window);
      expect(repeats.every((r) => r.type === 'duplicate')).toBe(true);
      // Past the window's edge: a second copy, which at-least-once allows (never a loss).
      expect(replies.at(-1)).toEqual({ type: 'ok' });
      expect(machine.counts().ready).toBe(window + 2);
      expect(machine.deadLetterTotals().duplicatesDropped).toBe(window);
    });
  }

  it('a log without the entry replays under the old window on this build (as an older build applied it)', () => {
    const log: QueueCommand[] = [];
    for (let id = 1; id <= 2 * LEGACY; id++) log.push(handOff(id));
    log.push(handOff(1), handOff(LEGACY + 1));
    const { machine, replies } = replay(log);
    expect(machine.dedupeWindow()).toBe(LEGACY);
    // Id 1 was forgotten under 1,024 (a new copy), LEGACY + 1 was kept.
    expect(replies.slice(-2)).toEqual([{ type: 'ok' }, { type: 'duplicate' }]);
  });

  it('every replica applies the window from the same index: identical replies and state', () => {
    const log: QueueCommand[] = [];
    for (let id = 1; id <= 1500; id++) log.push(handOff(id));
    log.push(widen(WIDE_DEDUPE_WINDOW));
    for (let id = 1501; id <= 3000; id++) log.push(handOff(id));
    for (let id = 1; id <= 3000; id += 7) log.push(handOff(id));
    const a = replay(log);
    const b = replay(log);
    expect(b.replies).toEqual(a.replies);
    expect(b.machine.snapshot()).toEqual(a.machine.snapshot());
    // Ids 1..476 were forgotten before the window widened (1,500 under 1,024), so their repeats are
    // new copies; every repeat of an id taken after it is dropped.
    const repeats = a.replies.slice(3001);
    const ids = Array.from({ length: repeats.length }, (_, i) => 1 + 7 * i);
    for (const [i, id] of ids.entries()) {
      expect(repeats[i]?.type, `id ${id}`).toBe(id <= 1500 - LEGACY ? 'ok' : 'duplicate');
    }
  });

  it('ignores a window out of bounds, alike on every replica', () => {
    for (const bad of [0, MAX_DEDUPE_WINDOW + 1, 2 ** 40]) {
      const { machine, replies } = replay([handOff(1), widen(bad), handOff(1)]);
      expect(machine.dedupeWindow()).toBe(LEGACY);
      expect(replies.map((r) => r.type)).toEqual(['ok', 'ok', 'duplicate']);
    }
  });

  it('narrowing forgets the smallest ids at once (a later copy, never a loss)', () => {
    const { machine, replies } = replay([
      handOff(1),
      handOff(2),
      handOff(3),
      widen(2),
      handOff(1),
      handOff(3),
    ]);
    expect(machine.dedupeWindow()).toBe(2);
    expect(replies.slice(-2).map((r) => r.type)).toEqual(['ok', 'duplicate']);
  });
});

describe('snapshots and the dedupe window', () => {
  it('a queue whose log never set a window snapshots in a version an older build reads (<= 4)', () => {
    const { machine } = replay([handOff(1), handOff(2)]);
    expect(machine.snapshot()[0]).toBeLessThanOrEqual(4);
  });

  it('version 5 keeps the window: a restored replica dedupes at the edge as the original does', () => {
    const log: QueueCommand[] = [widen(WIDE_DEDUPE_WINDOW)];
    for (let id = 1; id <= WIDE_DEDUPE_WINDOW + 1; id++) log.push(handOff(id));
    const { machine } = replay(log);
    const bytes = machine.snapshot();
    expect(bytes[0]).toBe(5);
    const restored = new QueueMachine();
    restored.restore(bytes, { index: log.length, term: 1, ts: 0 });
    expect(restored.dedupeWindow()).toBe(WIDE_DEDUPE_WINDOW);
    expect(restored.snapshot()).toEqual(bytes);
    const meta = { index: log.length + 1, term: 1, ts: 0 };
    expect(restored.apply(handOff(2), meta).reply).toEqual({ type: 'duplicate' });
    expect(restored.apply(handOff(WIDE_DEDUPE_WINDOW + 1), { ...meta, index: meta.index + 1 }).reply).toEqual(
      {
        type: 'duplicate',
      },
    );
    expect(restored.apply(handOff(1), { ...meta, index: meta.index + 2 }).reply).toEqual({ type: 'ok' });
  });

  it('a snapshot taken before the window widened restores the old window', () => {
    const { machine } = replay([handOff(1)]);
    const restored = new QueueMachine();
    restored.apply(widen(WIDE_DEDUPE_WINDOW), { index: 1, term: 1, ts: 0 });
    restored.restore(machine.snapshot(), { index: 1, term: 1, ts: 0 });
    expect(restored.dedupeWindow()).toBe(LEGACY);
  });

  it('refuses a version 5 snapshot with a window out of bounds', () => {
    const { machine } = replay([widen(WIDE_DEDUPE_WINDOW), handOff(1)]);
    const bytes = machine.snapshot();
    // The window is the last varint (4096 = two bytes): make it 0.
    const bad = new Uint8Array([...bytes.subarray(0, bytes.length - 2), 0]);
    expect(() => new QueueMachine().restore(bad, { index: 2, term: 1, ts: 0 })).toThrow(QueueSnapshotError);
  });
});
