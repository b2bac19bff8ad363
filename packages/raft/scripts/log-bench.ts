/**
 * Timing script (not a test): proposals committed per second through SingleVoterLog on the LMDB
 * log store, with 1 KiB commands, for 1 group and for 100 groups, each keeping a fixed number of
 * proposals in flight. Prints figures only.
 *
 *   node packages/raft/scripts/log-bench.ts [seconds per scenario, default 3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbLogStorage } from '../src/lmdb/lmdb-log-storage.ts';
import type { CommandCodec, EntryMeta, StateMachine } from '../src/replicated-log.ts';
import { SingleVoterLog } from '../src/single-voter-log.ts';
import type { LogStorage, LogWrite } from '../src/storage/log-storage.ts';
import { LogStore } from '../src/storage/log-store.ts';

if (process.argv[2] === '--help' || process.argv[2] === '-h') {
  process.stdout.write(`Usage: node packages/raft/scripts/log-bench.ts [SECONDS]

Proposals committed per second through SingleVoterLog on the LMDB log store (1 KiB commands), for
1 group and for 100 groups with a fixed number of proposals in flight. SECONDS per scenario (default 3).
`);
  process.exit(0);
}
const SECONDS = Number(process.argv[2] ?? 3);
if (!Number.isFinite(SECONDS) || SECONDS <= 0) {
  process.stderr.write(`log-bench: SECONDS must be a positive number, got '${process.argv[2]}'\n`);
  process.exit(2);
}
const COMMAND_BYTES = 1024;

const identity: CommandCodec<Uint8Array> = { encode: (c) => c, decode: (b) => b };

class CountingMachine implements StateMachine<Uint8Array, number> {
  applied = 0;
  bytes = 0;
  apply(command: Uint8Array, meta: EntryMeta): number {
    this.applied++;
    this.bytes += command.length;
    return meta.index;
  }
  snapshot(): Uint8Array {
    return new Uint8Array(8);
  }
  restore(): void {}
}

/** Counts LMDB transactions (one per group-commit batch) and the writes they carried. */
class CountingStorage implements LogStorage {
  readonly inner: LogStorage;
  batches = 0;
  writes = 0;
  constructor(inner: LogStorage) {
    this.inner = inner;
  }
  write(writes: readonly LogWrite[]): Promise<void> {
    this.batches++;
    this.writes += writes.length;
    return this.inner.write(writes);
  }
  entries(groupId: string, from: number, to?: number) {
    return this.inner.entries(groupId, from, to);
  }
  lastIndex(groupId: string) {
    return this.inner.lastIndex(groupId);
  }
  hardState(groupId: string) {
    return this.inner.hardState(groupId);
  }
  snapshot(groupId: string) {
    return this.inner.snapshot(groupId);
  }
  close() {
    return this.inner.close();
  }
}

interface Scenario {
  readonly groups: number;
  /** Proposals each group keeps in flight. */
  readonly depth: number;
}

async function run({ groups, depth }: Scenario): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'styx-log-bench-'));
  const storage = new CountingStorage(LmdbLogStorage.open({ path: dir }));
  const store = new LogStore(storage);
  const command = new Uint8Array(COMMAND_BYTES).fill(42);
  const logs: SingleVoterLog<Uint8Array, number>[] = [];
  const machines: CountingMachine[] = [];
  for (let g = 0; g < groups; g++) {
    const log = new SingleVoterLog<Uint8Array, number>(`bench-group-${g}`, store, identity);
    const machine = new CountingMachine();
    await log.open(machine);
    logs.push(log);
    machines.push(machine);
  }

  let running = true;
  let committed = 0;
  const latencies: number[] = [];
  const drained: Promise<void>[] = [];
  for (const log of logs) {
    for (let slot = 0; slot < depth; slot++) {
      drained.push(
        (async () => {
          while (running) {
            const start = performance.now();
            await log.propose(command);
            if (committed % 16 === 0) latencies.push(performance.now() - start);
            committed++;
          }
        })(),
      );
    }
  }
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  running = false;
  const elapsed = (performance.now() - started) / 1000;
  const done = committed;
  await Promise.all(drained);

  latencies.sort((a, b) => a - b);
  const pct = (p: number): string => (latencies[Math.floor((latencies.length - 1) * p)] ?? 0).toFixed(2);
  const perSecond = done / elapsed;
  console.log(
    [
      `groups=${String(groups).padStart(3)}`,
      `in-flight/group=${String(depth).padStart(3)}`,
      `${Math.round(perSecond).toLocaleString('en-US').padStart(9)} proposals/s`,
      `${((perSecond * COMMAND_BYTES) / 2 ** 20).toFixed(1).padStart(6)} MiB/s`,
      `${storage.batches} txns (${(storage.writes / Math.max(1, storage.batches)).toFixed(1)} entries/txn)`,
      `latency p50=${pct(0.5)}ms p99=${pct(0.99)}ms`,
    ].join('  '),
  );

  for (const log of logs) await log.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`SingleVoterLog on LMDB, ${COMMAND_BYTES}-byte commands, ${SECONDS}s per scenario (${tmpdir()})`);
for (const scenario of [
  { groups: 1, depth: 1 },
  { groups: 1, depth: 64 },
  { groups: 100, depth: 1 },
  { groups: 100, depth: 8 },
]) {
  await run(scenario);
}
