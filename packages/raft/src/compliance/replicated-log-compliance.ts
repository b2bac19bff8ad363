import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../clock.ts';
import { ManualClock } from '../clock.ts';
import { LogClosedError, LogNotOpenError } from '../errors.ts';
import type { CommandCodec, ReplicatedLog, RoleChange } from '../replicated-log.ts';
import type { CounterCommand, CounterResult } from './counter-machine.ts';
import { CounterMachine, counterCodec } from './counter-machine.ts';

/** What the suite hands a harness when it asks for a log. */
export interface ComplianceDeps<C> {
  readonly codec: CommandCodec<C>;
  /** The clock the leader must stamp entries with; the suite moves it, backwards too. */
  readonly clock: Clock;
}

/** How the suite gets logs of one implementation. */
export interface ReplicatedLogHarness {
  /** Before each test: fresh, empty storage. */
  setup?(): void | Promise<void>;
  /** After each test: release everything, remove the storage. */
  teardown?(): void | Promise<void>;
  /** A new, unopened log for `groupId` on the current storage. */
  create<C, R>(groupId: string, deps: ComplianceDeps<C>): ReplicatedLog<C, R>;
  /**
   * Durable logs only: a clean node restart. The suite has closed the logs it cares about; the
   * harness closes the storage and reopens it. Logs created before are unusable afterwards.
   */
  restart?(): Promise<void>;
  /**
   * Durable logs only: the process dies and the node restarts. Only what was synced survives; logs
   * created before are abandoned without being closed and must never be touched again.
   */
  crash?(): Promise<void>;
  /** Whether a replica is the leader as soon as `open` resolves (single-node logs). Default true. */
  readonly leaderAtOpen?: boolean;
}

type CounterLog = ReplicatedLog<CounterCommand, CounterResult>;

const START_MS = 1_700_000_000_000;

/**
 * Register the `ReplicatedLog` compliance tests (vitest) for one implementation. Every log —
 * in-memory, single-voter, Raft — runs the same suite, so a queue written against the interface
 * behaves the same on all of them.
 */
export function replicatedLogCompliance(name: string, harness: ReplicatedLogHarness): void {
  describe(`ReplicatedLog compliance: ${name}`, () => {
    let clock: ManualClock;
    const opened: CounterLog[] = [];

    beforeEach(async () => {
      clock = new ManualClock(START_MS);
      opened.length = 0;
      await harness.setup?.();
    });

    afterEach(async () => {
      for (const log of opened) await log.close();
      await harness.teardown?.();
    });

    function create(groupId: string): CounterLog {
      const log = harness.create<CounterCommand, CounterResult>(groupId, { codec: counterCodec, clock });
      opened.push(log);
      return log;
    }

    /** Open and wait until the replica leads (at once for single-node logs). */
    async function openLeader(log: CounterLog, machine = new CounterMachine()): Promise<CounterMachine> {
      const led = new Promise<void>((resolve) => {
        const stop = log.onRole((change) => {
          if (change.role === 'leader') {
            stop();
            resolve();
          }
        });
      });
      await log.open(machine);
      if (log.role !== 'leader') await led;
      return machine;
    }

    async function proposeAll(log: CounterLog, adds: readonly number[]): Promise<CounterResult[]> {
      return Promise.all(adds.map((add) => log.propose({ add })));
    }

    describe('roles', () => {
      it.runIf(harness.leaderAtOpen !== false)('reports the leader role during open', async () => {
        const log = create('g1');
        const changes: RoleChange[] = [];
        const dropped: RoleChange[] = [];
        log.onRole((change) => changes.push(change));
        const unsubscribe = log.onRole((change) => dropped.push(change));
        unsubscribe();
        await log.open(new CounterMachine());
        expect(log.role).toBe('leader');
        expect(changes.length).toBeGreaterThanOrEqual(1);
        expect(changes[0]?.role).toBe('leader');
        expect(changes[0]?.term).toBeGreaterThanOrEqual(1);
        expect(dropped).toEqual([]);
      });
    });

    describe('proposals', () => {
      it('rejects a proposal before open with LogNotOpenError', async () => {
        const log = create('g1');
        await expect(log.propose({ add: 1 })).rejects.toBeInstanceOf(LogNotOpenError);
      });

      it('resolves sequential proposals with their apply results, in log order', async () => {
        const log = create('g1');
        const machine = await openLeader(log);
        const results: CounterResult[] = [];
        for (const add of [5, 7, 11]) results.push(await log.propose({ add }));
        expect(results.map((r) => r.total)).toEqual([5, 12, 23]);
        const first = results[0]?.index ?? 0;
        expect(results.map((r) => r.index)).toEqual([first, first + 1, first + 2]);
        expect(machine.state.values.slice(-3)).toEqual([5, 7, 11]);
      });

      it('applies every proposal of one turn, in proposal order, and resolves them in that order', async () => {
        const log = create('g1');
        const machine = await openLeader(log);
        const adds = Array.from({ length: 200 }, (_, i) => i + 1);
        const resolvedOrder: number[] = [];
        const results = await Promise.all(
          adds.map((add) =>
            log.propose({ add }).then((result) => {
              resolvedOrder.push(add);
              return result;
            }),
          ),
        );
        expect(machine.state.values).toEqual(adds);
        expect(resolvedOrder).toEqual(adds);
        const indexes = results.map((r) => r.index);
        expect(indexes).toEqual(indexes.map((_, i) => (indexes[0] ?? 0) + i));
        expect(results.at(-1)?.total).toBe((200 * 201) / 2);
      });

      it('applies each entry exactly once', async () => {
        const log = create('g1');
        const machine = await openLeader(log);
        await proposeAll(log, [1, 2, 3]);
        await log.propose({ add: 4 });
        await proposeAll(log, [5, 6]);
        const indexes = machine.appliedIndexes;
        expect(new Set(indexes).size).toBe(indexes.length);
        expect(indexes).toEqual(indexes.map((_, i) => (indexes[0] ?? 0) + i));
        expect(machine.state.values).toEqual([1, 2, 3, 4, 5, 6]);
      });

      it('rejects only the proposal whose apply threw; the entry still counts as applied', async () => {
        const log = create('g1');
        const machine = await openLeader(log);
        const outcomes = await Promise.allSettled([
          log.propose({ add: 1 }),
          log.propose({ add: 100, fail: true }),
          log.propose({ add: 2 }),
        ]);
        expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect(machine.state.values).toEqual([1, 100, 2]);
        expect(machine.state.total).toBe(3);
      });

      it('keeps groups apart: interleaved proposals of two logs keep their own order and indexes', async () => {
        const a = create('ga');
        const b = create('gb');
        const ma = await openLeader(a);
        const mb = await openLeader(b);
        const all: Promise<CounterResult>[] = [];
        for (let i = 1; i <= 20; i++) {
          all.push(a.propose({ add: i }));
          all.push(b.propose({ add: -i }));
        }
        await Promise.all(all);
        expect(ma.state.values).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        expect(mb.state.values).toEqual(Array.from({ length: 20 }, (_, i) => -(i + 1)));
        expect(ma.appliedIndexes).toEqual(mb.appliedIndexes);
      });
    });

    describe('timestamps', () => {
      it('stamps max(clock, previous ts): never backwards when the clock steps back', async () => {
        const log = create('g1');
        await openLeader(log);
        clock.set(START_MS + 10_000);
        const a = await log.propose({ add: 1 });
        clock.set(START_MS + 5_000); // NTP stepped the clock back
        const b = await log.propose({ add: 1 });
        clock.set(START_MS + 20_000);
        const c = await log.propose({ add: 1 });
        expect([a.ts, b.ts, c.ts]).toEqual([START_MS + 10_000, START_MS + 10_000, START_MS + 20_000]);
      });

      it('keeps timestamps monotonic within one turn while the clock jumps around', async () => {
        const log = create('g1');
        await openLeader(log);
        const proposals: Promise<CounterResult>[] = [];
        for (const offset of [300, 100, 200, 50, 400]) {
          clock.set(START_MS + offset);
          proposals.push(log.propose({ add: 1 }));
        }
        const ts = (await Promise.all(proposals)).map((r) => r.ts - START_MS);
        expect(ts).toEqual([300, 300, 300, 300, 400]);
      });
    });

    describe('close', () => {
      it('rejects pending and later proposals with LogClosedError and applies nothing after close', async () => {
        const log = create('g1');
        const machine = await openLeader(log);
        await log.propose({ add: 1 });
        const pending = [log.propose({ add: 2 }), log.propose({ add: 3 })];
        await log.close();
        for (const outcome of await Promise.allSettled(pending)) {
          expect(outcome.status).toBe('rejected');
          if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(LogClosedError);
        }
        await expect(log.propose({ add: 4 })).rejects.toBeInstanceOf(LogClosedError);
        // A proposal of another group committing shows the closed log's last batch has completed too.
        const other = create('g2');
        await openLeader(other);
        await other.propose({ add: 0 });
        expect(machine.state.values).toEqual([1]);
        await expect(log.close()).resolves.toBeUndefined(); // idempotent
      });
    });

    const restart = harness.restart?.bind(harness);
    describe.runIf(restart !== undefined)('durability', () => {
      const restartNode = async (): Promise<void> => {
        for (const log of opened) await log.close();
        opened.length = 0;
        await restart?.();
      };

      it('replays the log into a fresh machine after a restart and reaches the same state', async () => {
        const log = create('g1');
        const before = await openLeader(log);
        await proposeAll(log, [1, 2, 3]);
        await proposeAll(log, [4, 5]);
        await restartNode();

        const after = await openLeader(create('g1'));
        expect(after.state).toEqual(before.state);
        expect(after.appliedIndexes).toEqual(before.appliedIndexes);
      });

      it('continues indexes and timestamps after a restart, even with the clock set back', async () => {
        clock.set(START_MS + 60_000);
        const log = create('g1');
        await openLeader(log);
        const last = await log.propose({ add: 1 });
        await restartNode();

        clock.set(START_MS); // restarted with a clock a minute behind
        const reopened = create('g1');
        await openLeader(reopened);
        const next = await reopened.propose({ add: 1 });
        expect(next.index).toBe(last.index + 1);
        expect(next.ts).toBeGreaterThanOrEqual(last.ts);
      });

      it('restores the snapshot and replays only the entries after it once compacted', async () => {
        const log = create('g1');
        const before = await openLeader(log);
        await proposeAll(log, [1, 2, 3, 4]);
        await log.compact();
        await proposeAll(log, [5, 6]);
        await restartNode();

        const after = await openLeader(create('g1'));
        expect(after.state).toEqual(before.state);
        const snapshotIndex = after.restored.at(-1)?.index ?? 0;
        expect(snapshotIndex).toBeGreaterThanOrEqual(4);
        // Exactly the entries after the snapshot, each once.
        const lastIndex = before.state.lastIndex;
        expect(after.appliedIndexes).toEqual(
          Array.from({ length: lastIndex - snapshotIndex }, (_, i) => snapshotIndex + 1 + i),
        );
      });

      it('compacts repeatedly and with nothing new without losing state', async () => {
        const log = create('g1');
        const before = await openLeader(log);
        await log.compact(); // nothing applied yet
        await proposeAll(log, [1, 2]);
        await log.compact();
        await log.compact(); // nothing new
        await proposeAll(log, [3]);
        await log.compact();
        await restartNode();

        const reopened = create('g1');
        const after = await openLeader(reopened);
        expect(after.state).toEqual(before.state);
        expect(after.appliedIndexes).toEqual([]);
        const next = await reopened.propose({ add: 4 });
        expect(next.total).toBe(10);
      });

      it('destroy removes everything stored for the group and nothing of other groups', async () => {
        const doomed = create('g1');
        const kept = create('g2');
        await openLeader(doomed);
        const keptBefore = await openLeader(kept);
        await proposeAll(doomed, [1, 2, 3]);
        await doomed.compact();
        await proposeAll(doomed, [4]);
        await proposeAll(kept, [7, 8]);
        await doomed.destroy();
        await expect(doomed.propose({ add: 1 })).rejects.toBeInstanceOf(LogClosedError);
        await restartNode();

        const recreated = create('g1');
        const fresh = await openLeader(recreated);
        expect(fresh.restored).toEqual([]);
        expect(fresh.appliedIndexes).toEqual([]);
        expect(fresh.state.values).toEqual([]);
        const first = await recreated.propose({ add: 9 });
        expect(first.index).toBe(1);
        const keptAfter = await openLeader(create('g2'));
        expect(keptAfter.state).toEqual(keptBefore.state);
      });
    });

    const crash = harness.crash?.bind(harness);
    describe.runIf(crash !== undefined)('crash', () => {
      it('keeps every confirmed entry and replays a gap-free, duplicate-free prefix of the proposals', async () => {
        const log = create('g1');
        await openLeader(log);
        const confirmed = await proposeAll(log, [1, 2, 3]);
        // Proposals in flight when the process dies: some may have become durable, none confirmed.
        const inFlight = [4, 5, 6, 7].map((add) => log.propose({ add }));
        for (const p of inFlight) p.catch(() => {});
        opened.length = 0; // abandoned, never closed
        await crash?.();

        const after = await openLeader(create('g1'));
        const values = after.state.values;
        expect(values.slice(0, 3)).toEqual([1, 2, 3]);
        expect([4, 5, 6, 7].slice(0, values.length - 3)).toEqual(values.slice(3));
        expect(after.appliedIndexes).toEqual(values.map((_, i) => i + 1));
        expect(confirmed.at(-1)?.index).toBe(3);
      });
    });
  });
}
