// The nemesis: a schedule of faults planned from the seed alone (planSchedule is pure, so a seed
// replays the same faults at the same times), then carried out against the cluster by Nemesis.
// One fault at a time, each healed before a quiet gap and the next: the report's recovery time is
// then the cluster's, after that heal, not the sum of overlapping faults.
//
// "Leaders preferred": a fault aimed at a leader names a workload queue; at run time it hits the
// node leading that queue then (what the management API says), else the planned fallback node.
import type { ChaosCluster } from './cluster.ts';
import type { History } from './history.ts';
import type { ChaosNetwork } from './network.ts';
import { seededRandom } from './random.ts';

export const FAULT_KINDS = ['kill', 'pause', 'partition', 'slow'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
export const PARTITION_SHAPES = ['halves', 'isolate-leader', 'one-way', 'flapping'] as const;
export type PartitionShape = (typeof PARTITION_SHAPES)[number];

/** The node a fault centres on: a queue's leader at run time, or `node` (1-based) as planned. */
export interface Target {
  readonly leaderOf: number | undefined;
  readonly node: number;
}

export interface PlannedFault {
  /** 1-based ordinal in the schedule. */
  readonly n: number;
  /** Start, ms after the workload started. */
  readonly at: number;
  readonly kind: FaultKind;
  readonly durationMs: number;
  readonly target: Target;
  readonly shape?: PartitionShape;
  /** halves and flapping: the two sides (1-based node numbers; the target's side first). */
  readonly groups?: readonly (readonly number[])[];
  /** flapping: how long each cut and each heal lasts. */
  readonly flapMs?: number;
  /** slow: egress rate to peers and random loss. */
  readonly rateKbit?: number;
  readonly lossPercent?: number;
}

export interface ScheduleOptions {
  readonly seed: number;
  readonly faults: readonly FaultKind[];
  readonly nodes: number;
  /** How long the workload runs; every fault ends a few seconds before. */
  readonly durationMs: number;
  /** How many workload queues a leader-preferring fault may aim at. */
  readonly queues: number;
  /** Quiet time before the first fault and between faults, ms (default 4–9 s). */
  readonly gapMs?: readonly [number, number];
  /** Length of a fault, ms (default 3–12 s). */
  readonly faultMs?: readonly [number, number];
}

/** The whole schedule for a run, from the seed and options alone. */
export function planSchedule(options: ScheduleOptions): PlannedFault[] {
  const random = seededRandom(options.seed);
  const [gapMin, gapMax] = options.gapMs ?? [4_000, 9_000];
  const [faultMin, faultMax] = options.faultMs ?? [3_000, 12_000];
  const schedule: PlannedFault[] = [];
  if (options.faults.length === 0) return schedule;
  const nodes = Array.from({ length: options.nodes }, (_, i) => i + 1);
  let t = 0;
  for (;;) {
    t += random.between(gapMin, gapMax);
    const kind = random.pick(options.faults);
    const durationMs = random.between(faultMin, faultMax);
    if (t + durationMs > options.durationMs - 3_000) break;
    // Drawn for every fault whatever its kind, so adding a kind changes choices, not their count.
    const target: Target = {
      leaderOf: random.chance(0.7) ? random.int(options.queues) : undefined,
      node: random.pick(nodes),
    };
    const shape = random.pick(PARTITION_SHAPES);
    const side = random.shuffle(nodes);
    const half = Math.floor(nodes.length / 2);
    const groups = [side.slice(0, half), side.slice(half)];
    const flapMs = random.between(500, 2_000);
    const rateKbit = random.pick([64, 128, 256, 512]);
    const lossPercent = random.pick([0, 2, 5, 10]);
    const base = { n: schedule.length + 1, at: t, kind, durationMs, target };
    if (kind === 'partition')
      schedule.push({
        ...base,
        // isolate-leader and one-way act on the target alone; halves and flapping on the groups.
        target: shape === 'isolate-leader' ? { ...target, leaderOf: target.leaderOf ?? 0 } : target,
        shape,
        ...(shape === 'halves' || shape === 'flapping' ? { groups } : {}),
        ...(shape === 'flapping' ? { flapMs } : {}),
      });
    else if (kind === 'slow') schedule.push({ ...base, rateKbit, lossPercent });
    else schedule.push(base);
    t += durationMs;
  }
  return schedule;
}

/** One line per planned fault, for the report and a failure's printout. */
export function describeFault(fault: PlannedFault): string {
  const target =
    fault.target.leaderOf !== undefined
      ? `leader of queue #${fault.target.leaderOf}`
      : `n${fault.target.node}`;
  const at = `${(fault.at / 1000).toFixed(1)}s +${(fault.durationMs / 1000).toFixed(1)}s`;
  switch (fault.kind) {
    case 'partition': {
      const sides = fault.groups?.map((g) => g.map((n) => `n${n}`).join(',')).join(' | ');
      return `#${fault.n} ${at} partition ${fault.shape}${sides !== undefined ? ` [${sides}]` : ` of ${target}`}${
        fault.flapMs !== undefined ? ` every ${fault.flapMs} ms` : ''
      }`;
    }
    case 'slow':
      return `#${fault.n} ${at} slow links from ${target}: ${fault.rateKbit} kbit/s, ${fault.lossPercent}% loss`;
    default:
      return `#${fault.n} ${at} ${fault.kind} ${target}`;
  }
}

export interface NemesisStatus {
  readonly current: string | undefined;
  readonly byKind: Readonly<Record<string, number>>;
  readonly done: number;
}

/** Carries out a schedule against the cluster, recording every fault and heal in the history. */
export class Nemesis {
  readonly #cluster: ChaosCluster;
  readonly #network: ChaosNetwork;
  readonly #history: History;
  readonly #schedule: readonly PlannedFault[];
  readonly #queues: readonly string[];
  #current: string | undefined;
  #done = 0;
  readonly #byKind: Record<string, number> = {};

  constructor(
    cluster: ChaosCluster,
    network: ChaosNetwork,
    history: History,
    schedule: readonly PlannedFault[],
    queues: readonly string[],
  ) {
    this.#cluster = cluster;
    this.#network = network;
    this.#history = history;
    this.#schedule = schedule;
    this.#queues = queues;
  }

  status(): NemesisStatus {
    return { current: this.#current, byKind: { ...this.#byKind }, done: this.#done };
  }

  /** Runs the schedule from now; returns when it is over or `signal` aborts (after healing). */
  async run(signal: AbortSignal): Promise<void> {
    const startedAt = Date.now();
    for (const fault of this.#schedule) {
      await sleep(fault.at - (Date.now() - startedAt), signal);
      if (signal.aborted) return;
      await this.#apply(fault, signal);
    }
  }

  /** Undoes whatever is in force: every rule, every paused node, every node down. */
  async healAll(): Promise<void> {
    await this.#network.heal();
    for (const node of this.#cluster.nodes) {
      if (node.state === 'paused') this.#cluster.resume(node.name);
      if (node.state === 'down') await this.#cluster.restart(node.name);
    }
  }

  async #apply(fault: PlannedFault, signal: AbortSignal): Promise<void> {
    const target = await this.#resolve(fault.target);
    const name = `n${target}`;
    const label = `${fault.kind}${fault.shape !== undefined ? `/${fault.shape}` : ''}`;
    const groups = this.#groups(fault, target);
    // What the fault touches, as people read it: "n2" or "n1,n3 | n2".
    const touched =
      fault.kind === 'partition' && fault.shape !== 'one-way'
        ? groups.map((g) => g.map((n) => `n${n}`).join(',')).join(' | ')
        : fault.shape === 'one-way'
          ? `${name} -/-> others`
          : name;
    this.#current = `${label} ${touched}`;
    this.#byKind[label] = (this.#byKind[label] ?? 0) + 1;
    this.#history.append({
      type: 'info',
      process: 'nemesis',
      f: 'fault',
      value: {
        n: fault.n,
        kind: label,
        nodes: touched,
        ...(fault.kind === 'slow' ? { rateKbit: fault.rateKbit, lossPercent: fault.lossPercent } : {}),
      },
    });
    switch (fault.kind) {
      case 'kill':
        await this.#cluster.kill(name);
        break;
      case 'pause':
        this.#cluster.pause(name);
        break;
      case 'slow':
        await this.#network.slow(target, {
          rateKbit: fault.rateKbit ?? 256,
          lossPercent: fault.lossPercent ?? 0,
        });
        break;
      case 'partition':
        if (fault.shape === 'one-way') {
          // The target hears every peer, but nothing it sends reaches them.
          for (const peer of this.#cluster.nodes)
            if (peer.host.index !== target) await this.#network.cut(target, peer.host.index);
        } else await this.#network.partition(groups);
        break;
    }
    if (fault.shape === 'flapping') {
      // Cut, heal, cut... for the fault's duration, ending healed.
      const until = Date.now() + fault.durationMs;
      let cut = true;
      while (Date.now() < until && !signal.aborted) {
        await sleep(Math.min(fault.flapMs ?? 1_000, until - Date.now()), signal);
        if (cut) await this.#network.heal();
        else await this.#network.partition(groups);
        cut = !cut;
      }
    } else await sleep(fault.durationMs, signal);
    await this.healAll();
    this.#history.append({ type: 'info', process: 'nemesis', f: 'heal', value: { n: fault.n, kind: label } });
    this.#current = undefined;
    this.#done++;
  }

  #groups(fault: PlannedFault, target: number): number[][] {
    if (fault.groups !== undefined) return fault.groups.map((g) => [...g]);
    const others = this.#cluster.nodes.map((n) => n.host.index).filter((n) => n !== target);
    return [[target], others];
  }

  async #resolve(target: Target): Promise<number> {
    if (target.leaderOf === undefined) return target.node;
    const queue = this.#queues[target.leaderOf % this.#queues.length];
    const leader = queue === undefined ? undefined : await this.#cluster.leaderOf(queue);
    const node = this.#cluster.nodes.find((n) => n.name === leader);
    return node?.host.index ?? target.node;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
