/**
 * Raft group benchmark (issue 5, item 7): three `RaftHost`s in one process, each on its own LMDB
 * environment (real fsyncs), connected by the in-process transport.
 *
 * - commits/s and p50/p99 commit latency of 1 KiB proposals, each its own entry, "committed"
 *   meaning applied on the leader after a quorum (the leader and at least one follower) synced it;
 *   for 1 group, then 100 and 1,000 groups at once (leaders spread over the three hosts);
 * - the CPU an idle node spends on 10,000 quiesced groups (three replicas each).
 *
 *   node bench/raft/raft-bench.ts [--seconds 5] [--groups 1,100,1000] [--in-flight 2048]
 *                                 [--idle-groups 10000] [--idle-seconds 5] [--only load|idle]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CommandCodec, EntryMeta, LogStore, RaftGroupLog, StateMachine } from '@styx/raft';
import { InProcessHub, openLogStore, RaftHost } from '@styx/raft';

const HELP = `raft-bench: Raft groups of three replicas in one process on real LMDB

Usage: node bench/raft/raft-bench.ts [options]

  --seconds N        measured seconds per load scenario (default 5; 1 s of warm-up before)
  --groups LIST      group counts of the load scenarios (default 1,100,1000)
  --in-flight N      proposals kept in flight across all groups (default 2048; at least 1 per group)
  --payload N        bytes per proposal (default 1024)
  --idle-groups N    groups of the idle-CPU scenario (default 10000; 0 skips it)
  --idle-seconds N   measured seconds of the idle scenario (default 5)
  --only WHAT        run only "load" or "idle"
  --help             this text
`;

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    groups: { type: 'string', default: '1,100,1000' },
    'in-flight': { type: 'string', default: '2048' },
    payload: { type: 'string', default: '1024' },
    'idle-groups': { type: 'string', default: '10000' },
    'idle-seconds': { type: 'string', default: '5' },
    only: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

const SECONDS = Number(args.seconds);
const GROUP_COUNTS = args.groups.split(',').map(Number);
const IN_FLIGHT = Number(args['in-flight']);
const PAYLOAD_BYTES = Number(args.payload);
const IDLE_GROUPS = Number(args['idle-groups']);
const IDLE_SECONDS = Number(args['idle-seconds']);
const WARMUP_MS = 1_000;
const NODE_IDS = ['n1', 'n2', 'n3'];

const identity: CommandCodec<Uint8Array> = { encode: (c) => c, decode: (b) => b };

/** Counts what it applies; keeps nothing else. */
class CountingMachine implements StateMachine<Uint8Array, number> {
  applied = 0;
  apply(_command: Uint8Array, meta: EntryMeta): number {
    this.applied++;
    return meta.index;
  }
  snapshot(): Uint8Array {
    return new Uint8Array(8);
  }
  restore(): void {}
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Three hosts, each on its own LMDB environment in a temporary directory. */
class Cluster {
  readonly hub = new InProcessHub();
  readonly dirs: string[] = [];
  readonly stores: LogStore[] = [];
  readonly hosts: RaftHost[] = [];

  constructor() {
    for (const id of NODE_IDS) {
      const dir = mkdtempSync(join(tmpdir(), `styx-raft-bench-${id}-`));
      const store = openLogStore(dir);
      this.dirs.push(dir);
      this.stores.push(store);
      this.hosts.push(new RaftHost({ nodeId: id, logStore: store, transport: this.hub.connect(id) }));
    }
  }

  /**
   * Open `count` groups with replicas on every host; group i's leader is host i % 3 (it campaigns
   * once its peers' replicas are open). Resolves with each group's leader log.
   */
  async openGroups(count: number, prefix: string): Promise<RaftGroupLog<Uint8Array, number>[]> {
    const leaders: RaftGroupLog<Uint8Array, number>[] = [];
    const CHUNK = 500;
    for (let start = 0; start < count; start += CHUNK) {
      const end = Math.min(count, start + CHUNK);
      const opening: Promise<void>[] = [];
      const chunkLeaders: RaftGroupLog<Uint8Array, number>[] = [];
      for (let g = start; g < end; g++) {
        const groupId = `${prefix}-${g}`;
        const leaderAt = g % NODE_IDS.length;
        const followers = this.hosts
          .filter((_, h) => h !== leaderAt)
          .map((host) => host.createLog<Uint8Array, number>(groupId, identity, { voters: NODE_IDS }));
        opening.push(...followers.map((f) => f.open(new CountingMachine())));
        chunkLeaders.push(
          (this.hosts[leaderAt] as RaftHost).createLog<Uint8Array, number>(groupId, identity, {
            voters: NODE_IDS,
            campaignOnOpen: true,
          }),
        );
      }
      await Promise.all(opening);
      await Promise.all(
        chunkLeaders.map((leader) => leader.open(new CountingMachine()).then(() => leads(leader))),
      );
      leaders.push(...chunkLeaders);
      if (count > CHUNK) log(`  opened ${end}/${count} groups`);
    }
    return leaders;
  }

  async close(): Promise<void> {
    for (const host of this.hosts) await host.close();
    for (const store of this.stores) await store.close();
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

function leads(log: RaftGroupLog<Uint8Array, number>): Promise<void> {
  if (log.role === 'leader') return Promise.resolve();
  return new Promise((resolve) => {
    const stop = log.onRole((change) => {
      if (change.role === 'leader') {
        stop();
        resolve();
      }
    });
  });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface LoadResult {
  readonly groups: number;
  readonly inFlight: number;
  readonly commitsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuPercent: number;
  readonly batchesPerSecond: number;
}

async function loadScenario(groups: number): Promise<LoadResult> {
  const cluster = new Cluster();
  try {
    log(`load: opening ${groups} group(s) of 3 replicas`);
    const leaders = await cluster.openGroups(groups, 'load');
    const perGroup = Math.max(1, Math.floor(IN_FLIGHT / groups));
    const payload = new Uint8Array(PAYLOAD_BYTES).map((_, i) => (i * 31) & 0xff);
    const latencies: number[] = [];
    let measuring = false;
    let stopping = false;
    let committed = 0;
    let failed = 0;

    const pump = (leader: RaftGroupLog<Uint8Array, number>): void => {
      if (stopping) return;
      const started = performance.now();
      leader.propose(payload).then(
        () => {
          if (measuring) {
            committed++;
            latencies.push(performance.now() - started);
          }
          pump(leader);
        },
        () => {
          failed++;
          if (!stopping) setTimeout(() => pump(leader), 10);
        },
      );
    };
    log(`load: ${groups} group(s), ${perGroup} proposal(s) in flight per group, ${PAYLOAD_BYTES} B each`);
    for (const leader of leaders) for (let i = 0; i < perGroup; i++) pump(leader);
    await sleep(WARMUP_MS);
    measuring = true;
    const batchesBefore = cluster.hosts.reduce((sum, host) => sum + host.stats.batchesSent, 0);
    const cpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    for (let s = 1; s <= SECONDS; s++) {
      await sleep(1_000);
      log(`  ${s}/${SECONDS} s: ${committed.toLocaleString('en-US')} commits`);
    }
    measuring = false;
    const elapsedS = (performance.now() - startedAt) / 1_000;
    const cpu = process.cpuUsage(cpuBefore);
    const batches = cluster.hosts.reduce((sum, host) => sum + host.stats.batchesSent, 0) - batchesBefore;
    stopping = true;
    if (failed > 0) log(`  ${failed} proposal(s) failed (retried)`);
    const sorted = Float64Array.from(latencies).sort();
    await sleep(200); // let the last proposals settle before closing
    return {
      groups,
      inFlight: perGroup * groups,
      commitsPerSecond: committed / elapsedS,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99),
      cpuPercent: ((cpu.user + cpu.system) / 1_000 / (elapsedS * 1_000)) * 100,
      batchesPerSecond: batches / elapsedS,
    };
  } finally {
    await cluster.close();
  }
}

interface IdleResult {
  readonly groups: number;
  readonly cpuPercent: number;
  readonly ticks: number;
  readonly activeGroups: number;
  readonly rssMiB: number;
}

async function idleScenario(groups: number): Promise<IdleResult> {
  const cluster = new Cluster();
  try {
    log(`idle: opening ${groups} groups of 3 replicas`);
    const leaders = await cluster.openGroups(groups, 'idle');
    log('idle: one proposal per group, then waiting for every group to quiesce');
    const payload = new Uint8Array(PAYLOAD_BYTES);
    await Promise.all(leaders.map((leader) => leader.propose(payload)));
    const active = (): number => cluster.hosts.reduce((sum, host) => sum + host.stats.activeGroups, 0);
    while (active() > 0) {
      log(`  ${active()} replicas still active`);
      await sleep(500);
    }
    const ticksBefore = cluster.hosts.reduce((sum, host) => sum + host.stats.ticks, 0);
    const cpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    log(`idle: measuring CPU for ${IDLE_SECONDS} s`);
    await sleep(IDLE_SECONDS * 1_000);
    const elapsedMs = performance.now() - startedAt;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      groups,
      cpuPercent: ((cpu.user + cpu.system) / 1_000 / elapsedMs) * 100,
      ticks: cluster.hosts.reduce((sum, host) => sum + host.stats.ticks, 0) - ticksBefore,
      activeGroups: active(),
      rssMiB: process.memoryUsage().rss / 2 ** 20,
    };
  } finally {
    await cluster.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function pad(value: string, width: number): string {
  return value.padStart(width);
}

const loads: LoadResult[] = [];
if (args.only !== 'idle') {
  for (const groups of GROUP_COUNTS) loads.push(await loadScenario(groups));
}
let idle: IdleResult | undefined;
if (args.only !== 'load' && IDLE_GROUPS > 0) idle = await idleScenario(IDLE_GROUPS);

const out: string[] = [];
out.push(
  `Raft groups of 3 replicas, 3 hosts in one process, real LMDB (fsync), ${PAYLOAD_BYTES} B proposals`,
);
if (loads.length > 0) {
  out.push('');
  out.push('groups  in-flight   commits/s   p50 ms   p99 ms   CPU %   batches/s');
  for (const r of loads) {
    out.push(
      [
        pad(String(r.groups), 6),
        pad(String(r.inFlight), 10),
        pad(Math.round(r.commitsPerSecond).toLocaleString('en-US'), 11),
        pad(r.p50Ms.toFixed(2), 8),
        pad(r.p99Ms.toFixed(2), 8),
        pad(r.cpuPercent.toFixed(0), 7),
        pad(Math.round(r.batchesPerSecond).toLocaleString('en-US'), 11),
      ].join(' '),
    );
  }
}
if (idle !== undefined) {
  out.push('');
  out.push('idle groups  replicas   CPU %   ticks   active   RSS MiB');
  out.push(
    [
      pad(String(idle.groups), 11),
      pad(String(idle.groups * 3), 9),
      pad(idle.cpuPercent.toFixed(2), 7),
      pad(String(idle.ticks), 7),
      pad(String(idle.activeGroups), 8),
      pad(idle.rssMiB.toFixed(0), 9),
    ].join(' '),
  );
}
process.stdout.write(`${out.join('\n')}\n`);
