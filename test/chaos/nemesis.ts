// The nemesis: a schedule of faults planned from the seed alone (planSchedule is pure, so a seed
// replays the same faults at the same times), then carried out against the cluster by Nemesis.
// One fault at a time, each healed before a quiet gap and the next: the report's recovery time is
// then the cluster's, after that heal, not the sum of overlapping faults. With `overlap`, some
// faults get a second one of another class (network, process, membership) starting while the first
// is in force; each heals only itself, and a heal while the other is still in force is marked
// `concurrent` so the report keeps its recovery apart.
//
// Kinds beyond the default four (asked for by name): kill-each SIGKILLs every node in turn, each
// down a few seconds and restarted before the next; membership changes a queue's replicas with
// `styx ctl` (delete_member + add_member, shrink + grow, rebalance, and a leadership transfer as
// delete_member of the leader + add_member: Styx has no transfer verb) and heals by waiting for the
// queue's full replica set, every member a caught-up voter again.
//
// "Leaders preferred": a fault aimed at a leader names a workload queue; at run time it hits the
// node leading that queue then (what the management API says), else the planned fallback node.
import type { ChaosCluster, QuorumStatus } from './cluster.ts';
import type { History } from './history.ts';
import type { ChaosNetwork } from './network.ts';
import { seededRandom } from './random.ts';

export const FAULT_KINDS = ['kill', 'pause', 'partition', 'slow', 'kill-each', 'membership'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** What `--faults` means when not given: the first four (so a seed's schedule stays what it was). */
export const DEFAULT_FAULTS: readonly FaultKind[] = ['kill', 'pause', 'partition', 'slow'];
export const MEMBERSHIP_CHANGES = ['delete-add', 'shrink-grow', 'rebalance', 'leader-transfer'] as const;
export type MembershipChange = (typeof MEMBERSHIP_CHANGES)[number];
/** Faults of one class cannot overlap each other: they share what heals them. */
export type FaultClass = 'network' | 'process' | 'membership';
export function faultClass(kind: FaultKind): FaultClass {
  if (kind === 'partition' || kind === 'slow') return 'network';
  if (kind === 'membership') return 'membership';
  return 'process';
}
/**
 * The quiet time before the first fault and between faults when not told (`--gap`), ms: CI's fixed
 * seeds replay the schedules they always did with it.
 */
export const DEFAULT_GAP_MS: readonly [number, number] = [4_000, 9_000];
/** A gap as people read it: "4-9 s". */
export const formatGap = ([min, max]: readonly [number, number]): string => `${min / 1000}-${max / 1000} s`;
/** kill-each: how long after a node's restart the next one is killed, planned. */
export const KILL_EACH_SETTLE_MS = 4_000;
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
  /** kill-each: how long each node stays down. */
  readonly downMs?: number;
  /** membership: what changes. */
  readonly change?: MembershipChange;
  /** The fault (its n) this one starts during (`overlap`). */
  readonly overlaps?: number;
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
  /** Give about half the faults a second one, of another class, starting while it is in force. */
  readonly overlap?: boolean;
}

/** The whole schedule for a run, from the seed and options alone. */
export function planSchedule(options: ScheduleOptions): PlannedFault[] {
  const random = seededRandom(options.seed);
  const [gapMin, gapMax] = options.gapMs ?? DEFAULT_GAP_MS;
  const [faultMin, faultMax] = options.faultMs ?? [3_000, 12_000];
  const schedule: PlannedFault[] = [];
  if (options.faults.length === 0) return schedule;
  const nodes = Array.from({ length: options.nodes }, (_, i) => i + 1);
  // Drawn from apart, so that a schedule without the new kinds or overlap is the one it always was.
  const extra = seededRandom(options.seed ^ 0x0ae1);
  let t = 0;
  for (;;) {
    t += random.between(gapMin, gapMax);
    const kind = random.pick(options.faults);
    const drawn = random.between(faultMin, faultMax);
    const downMs = extra.between(3_000, 6_000);
    const durationMs = kind === 'kill-each' ? options.nodes * (downMs + KILL_EACH_SETTLE_MS) : drawn;
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
    else if (kind === 'kill-each') schedule.push({ ...base, downMs });
    else if (kind === 'membership') schedule.push({ ...base, change: extra.pick(MEMBERSHIP_CHANGES) });
    else schedule.push(base);
    let end = t + durationMs;
    if (options.overlap === true && extra.chance(0.5)) {
      const others = options.faults.filter((k) => faultClass(k) !== faultClass(kind));
      const second = others.length === 0 ? undefined : extra.pick(others);
      const at = t + Math.floor(durationMs * (extra.between(20, 60) / 100));
      const down = extra.between(3_000, 6_000);
      const length =
        second === 'kill-each'
          ? options.nodes * (down + KILL_EACH_SETTLE_MS)
          : extra.between(faultMin, faultMax);
      const node = extra.pick(nodes);
      const change = extra.pick(MEMBERSHIP_CHANGES);
      if (second !== undefined && at + length <= options.durationMs - 3_000) {
        const overlapping = {
          n: schedule.length + 1,
          at,
          kind: second,
          durationMs: length,
          target: { leaderOf: undefined, node },
          overlaps: base.n,
        };
        if (second === 'partition')
          schedule.push({ ...overlapping, shape: 'one-way' }); // acts on its target alone
        else if (second === 'slow') schedule.push({ ...overlapping, rateKbit, lossPercent });
        else if (second === 'kill-each') schedule.push({ ...overlapping, downMs: down });
        else if (second === 'membership') schedule.push({ ...overlapping, change });
        else schedule.push(overlapping);
        end = Math.max(end, at + length);
      }
    }
    t = end;
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
  const over = fault.overlaps === undefined ? '' : ` (during #${fault.overlaps})`;
  switch (fault.kind) {
    case 'partition': {
      const sides = fault.groups?.map((g) => g.map((n) => `n${n}`).join(',')).join(' | ');
      return `#${fault.n} ${at} partition ${fault.shape}${sides !== undefined ? ` [${sides}]` : ` of ${target}`}${
        fault.flapMs !== undefined ? ` every ${fault.flapMs} ms` : ''
      }${over}`;
    }
    case 'slow':
      return `#${fault.n} ${at} slow links from ${target}: ${fault.rateKbit} kbit/s, ${fault.lossPercent}% loss${over}`;
    case 'kill-each':
      return `#${fault.n} ${at} kill-each: every node in turn, each down ${((fault.downMs ?? 0) / 1000).toFixed(1)}s${over}`;
    case 'membership':
      return `#${fault.n} ${at} membership ${fault.change} around ${target}${over}`;
    default:
      return `#${fault.n} ${at} ${fault.kind} ${target}${over}`;
  }
}

export interface NemesisStatus {
  readonly current: string | undefined;
  readonly byKind: Readonly<Record<string, number>>;
  readonly done: number;
}

/** How long a membership heal waits for the queue's full replica set, caught up. */
const MEMBERSHIP_HEAL_MS = 90_000;

/** Carries out a schedule against the cluster, recording every fault and heal in the history. */
export class Nemesis {
  readonly #cluster: ChaosCluster;
  readonly #network: ChaosNetwork;
  readonly #history: History;
  readonly #schedule: readonly PlannedFault[];
  readonly #queues: readonly string[];
  /** The faults in force now (their labels, by n). */
  readonly #current = new Map<number, string>();
  #done = 0;
  readonly #byKind: Record<string, number> = {};
  /**
   * The least quiet time between a heal and the next fault, ms (`--gap`'s MIN; 0: none). A heal that
   * takes longer than planned (a membership fault waits for its replica sets, a restart for its node)
   * pushes the rest of the schedule back instead of eating the next gap, so every recovery gets MIN
   * to show before the next fault; faults that no longer fit in the run are not run.
   */
  readonly #quietAfterHealMs: number;

  constructor(
    cluster: ChaosCluster,
    network: ChaosNetwork,
    history: History,
    schedule: readonly PlannedFault[],
    queues: readonly string[],
    quietAfterHealMs = 0,
  ) {
    this.#cluster = cluster;
    this.#network = network;
    this.#history = history;
    this.#schedule = schedule;
    this.#queues = queues;
    this.#quietAfterHealMs = quietAfterHealMs;
  }

  status(): NemesisStatus {
    const current = [...this.#current.values()].join(' + ');
    return { current: current === '' ? undefined : current, byKind: { ...this.#byKind }, done: this.#done };
  }

  /** Runs the schedule from now; returns when it is over or `signal` aborts (after healing). */
  async run(signal: AbortSignal): Promise<void> {
    const startedAt = Date.now();
    const inFlight: Promise<void>[] = [];
    let slipMs = 0;
    let lastHealAt = Number.NEGATIVE_INFINITY;
    // The planned schedule ends a few seconds before the workload does; a pushed-back fault that
    // would end later is not run (it would be cut short, its recovery unmeasured).
    const scheduleEnd = Math.max(0, ...this.#schedule.map((f) => f.at + f.durationMs));
    for (const [i, fault] of this.#schedule.entries()) {
      if (fault.overlaps === undefined && this.#quietAfterHealMs > 0) {
        const planned = startedAt + fault.at + slipMs;
        const due = Math.max(planned, lastHealAt + this.#quietAfterHealMs);
        slipMs += due - planned;
        if (fault.at + slipMs + fault.durationMs > scheduleEnd) break;
      }
      // A timer may fire a millisecond before Date.now() reaches its due time: wait until it has.
      while (!signal.aborted && Date.now() - startedAt < fault.at + slipMs) {
        await sleep(Math.max(1, fault.at + slipMs - (Date.now() - startedAt)), signal);
      }
      if (signal.aborted) break;
      const next = this.#schedule[i + 1];
      const paired = fault.overlaps !== undefined || next?.overlaps === fault.n;
      inFlight.push(this.#apply(fault, signal, paired));
      if (next?.overlaps === fault.n) continue; // the second one starts while this is in force
      await Promise.all(inFlight.splice(0));
      if (paired) await this.healAll(); // each healed itself; this only makes sure
      lastHealAt = Date.now();
    }
    await Promise.all(inFlight);
  }

  /** Undoes whatever is in force: every rule, every paused node, every node down. */
  async healAll(): Promise<void> {
    await this.#network.heal();
    for (const node of this.#cluster.nodes) {
      if (node.state === 'paused') this.#cluster.resume(node.name);
      if (node.state === 'down') await this.#cluster.restart(node.name);
    }
  }

  /** `paired`: another fault overlaps this one, so it heals only what it did itself. */
  async #apply(fault: PlannedFault, signal: AbortSignal, paired: boolean): Promise<void> {
    const resolved = await this.#resolve(fault.target);
    const target = resolved.node;
    const name = `n${target}`;
    const label = `${fault.kind}${fault.shape !== undefined ? `/${fault.shape}` : ''}${
      fault.change !== undefined ? `/${fault.change}` : ''
    }`;
    const groups = this.#groups(fault, target);
    // What the fault touches, as people read it: "n2" or "n1,n3 | n2".
    const touched =
      fault.kind === 'partition' && fault.shape !== 'one-way'
        ? groups.map((g) => g.map((n) => `n${n}`).join(',')).join(' | ')
        : fault.shape === 'one-way'
          ? `${name} -/-> others`
          : fault.kind === 'kill-each'
            ? this.#cluster.nodes.map((n) => n.name).join(' → ')
            : fault.kind === 'membership'
              ? `${this.#membershipQueue(fault)} around ${name}`
              : name;
    this.#current.set(fault.n, `${label} ${touched}`);
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
        ...(fault.overlaps === undefined ? {} : { during: fault.overlaps }),
        // A kill of a queue's leader: which queue (the report's failover times). leaderUnknown: no
        // node named its leader, so the planned node was killed, which may not have led it.
        ...(fault.kind === 'kill' && resolved.queue !== undefined
          ? { queue: resolved.queue, ...(resolved.leaderFound ? {} : { leaderUnknown: true }) }
          : {}),
      },
    });
    let heal: () => Promise<Record<string, unknown>> = async () => ({});
    switch (fault.kind) {
      case 'kill':
        await this.#cluster.kill(name);
        heal = async () => {
          await this.#cluster.restart(name);
          return {};
        };
        break;
      case 'pause':
        this.#cluster.pause(name);
        heal = async () => {
          this.#cluster.resume(name);
          return {};
        };
        break;
      case 'slow':
        await this.#network.slow(target, {
          rateKbit: fault.rateKbit ?? 256,
          lossPercent: fault.lossPercent ?? 0,
        });
        heal = async () => {
          await this.#network.heal();
          return {};
        };
        break;
      case 'partition':
        if (fault.shape === 'one-way') {
          // The target hears every peer, but nothing it sends reaches them.
          for (const peer of this.#cluster.nodes)
            if (peer.host.index !== target) await this.#network.cut(target, peer.host.index);
        } else await this.#network.partition(groups);
        heal = async () => {
          await this.#network.heal();
          return {};
        };
        break;
      case 'kill-each':
        await this.#killEach(fault, signal);
        break;
      case 'membership': {
        const restore = await this.#changeMembership(fault, name, signal);
        heal = restore;
        break;
      }
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
    } else if (fault.kind !== 'kill-each') await sleep(fault.durationMs, signal);
    const healed = await heal();
    if (!paired) await this.healAll();
    this.#current.delete(fault.n);
    // Another fault still in force: this heal's recovery is not the cluster's own (reported apart).
    const concurrent = this.#current.size > 0;
    this.#history.append({
      type: 'info',
      process: 'nemesis',
      f: 'heal',
      value: { n: fault.n, kind: label, ...healed, ...(concurrent ? { concurrent: true } : {}) },
    });
    this.#done++;
  }

  /** Every node in turn: SIGKILL, down `downMs`, restart (the next once it listens and settled). */
  async #killEach(fault: PlannedFault, signal: AbortSignal): Promise<void> {
    for (const node of this.#cluster.nodes) {
      if (signal.aborted) return;
      this.#step(fault, `kill ${node.name}`);
      await this.#cluster.kill(node.name);
      await sleep(fault.downMs ?? 3_000, signal);
      await this.#cluster.restart(node.name);
      this.#step(fault, `restarted ${node.name}`);
      await sleep(KILL_EACH_SETTLE_MS, signal);
    }
  }

  #step(fault: PlannedFault, what: string): void {
    this.#history.append({ type: 'info', process: 'nemesis', f: 'step', value: { n: fault.n, step: what } });
  }

  /**
   * Carries out a membership change with `styx ctl` on a running node; returns the heal: put back
   * every replica the change removed and wait (up to MEMBERSHIP_HEAL_MS) until each touched queue
   * has its full replica set again, every member a voter and online. A verb that fails under the
   * faults (a node cut off from the metadata's quorum) is recorded and tried again at the heal.
   */
  async #changeMembership(
    fault: PlannedFault,
    node: string,
    signal: AbortSignal,
  ): Promise<() => Promise<Record<string, unknown>>> {
    const queue = this.#membershipQueue(fault);
    const before = new Map<string, readonly string[]>();
    for (const q of this.#queues) {
      const members = await this.#members(q);
      if (members !== undefined) before.set(q, members);
    }
    const members = before.get(queue) ?? [];
    // Run on a running node; a verb that failed (its node killed under it, say) is tried once more
    // on another running node, so that a fault does what it was planned to whatever the timing.
    const ctl = async (args: string[]): Promise<boolean> => {
      const tried: string[] = [];
      for (let attempt = 0; attempt < 2; attempt++) {
        const via =
          this.#cluster.nodes.find((n) => n.state === 'running' && !tried.includes(n.name))?.name ?? 'n1';
        tried.push(via);
        try {
          await this.#cluster.ctl(via, args);
          this.#step(fault, `styx ctl ${args.join(' ')} (via ${via}): done`);
          return true;
        } catch (error) {
          this.#step(fault, `styx ctl ${args.join(' ')} (via ${via}): ${String(error).slice(0, 300)}`);
        }
      }
      return false;
    };
    let touched: string[] = [queue];
    switch (fault.change) {
      case 'delete-add': {
        const who = members.includes(node) ? node : (members.find((m) => m !== members[0]) ?? node);
        await ctl(['delete_member', queue, who]);
        break;
      }
      case 'leader-transfer': {
        // No transfer verb: the leader leaves (it hands leadership over first) and comes back.
        const leader = await this.#cluster.leaderOf(queue);
        await ctl(['delete_member', queue, leader ?? node]);
        break;
      }
      case 'shrink-grow':
        await ctl(['shrink', node]);
        touched = [...before.keys()];
        break;
      case 'rebalance':
        await ctl(['rebalance', 'all']);
        touched = [];
        break;
      case undefined:
        break;
    }
    void signal;
    return async () => {
      if (fault.change === 'shrink-grow') await ctl(['grow', node, 'even']);
      const deadline = Date.now() + MEMBERSHIP_HEAL_MS;
      const missing = new Map<string, string[]>();
      for (;;) {
        missing.clear();
        const notMembers = new Map<string, string[]>();
        for (const q of touched) {
          const want = before.get(q) ?? [];
          // Both views: the metadata's member list, and the Raft group as its leader reports it (a
          // removal the metadata committed may not have reached the group yet, and the reverse).
          const listed = await this.#members(q);
          const current = listed ?? [];
          const status = await this.#status(q);
          const have = new Set(
            (status?.members ?? []).filter((m) => m.role !== 'learner' && m.online).map((m) => m.node),
          );
          const lacking = want.filter((m) => !have.has(m) || !current.includes(m));
          if (status === undefined || listed === undefined || lacking.length > 0) missing.set(q, lacking);
          if (listed !== undefined)
            notMembers.set(
              q,
              want.filter((m) => !current.includes(m)),
            );
        }
        if (missing.size === 0 || Date.now() > deadline) break;
        // Put back what is not even a member (a removal that went through, an add that failed).
        for (const [q, absent] of notMembers) for (const m of absent) await ctl(['add_member', q, m]);
        await new Promise((r) => setTimeout(r, 1_000));
      }
      const restored = missing.size === 0;
      return restored
        ? { restored }
        : { restored, missing: Object.fromEntries([...missing].map(([q, m]) => [q, m])) };
    };
  }

  /** The queue a membership fault changes (shrink-grow and rebalance touch others as well). */
  #membershipQueue(fault: PlannedFault): string {
    return this.#queues[(fault.target.leaderOf ?? fault.target.node) % this.#queues.length] as string;
  }

  async #members(queue: string): Promise<readonly string[] | undefined> {
    for (const node of this.#cluster.nodes) {
      if (node.state !== 'running') continue;
      const view = await this.#cluster.queue(node.name, queue, 2_000).catch(() => undefined);
      if (view?.members !== undefined) return view.members;
    }
    return undefined;
  }

  async #status(queue: string): Promise<QuorumStatus | undefined> {
    for (const node of this.#cluster.nodes) {
      if (node.state !== 'running') continue;
      const status = await this.#cluster.quorumStatus(node.name, queue, 3_000).catch(() => undefined);
      if (status !== undefined) return status;
    }
    return undefined;
  }

  #groups(fault: PlannedFault, target: number): number[][] {
    if (fault.groups !== undefined) return fault.groups.map((g) => [...g]);
    const others = this.#cluster.nodes.map((n) => n.host.index).filter((n) => n !== target);
    return [[target], others];
  }

  /**
   * The node a fault hits: the leader of queue #leaderOf as the nodes say now (`queue` names it,
   * `leaderFound` says whether a node named its leader), else the planned node.
   */
  async #resolve(target: Target): Promise<{ node: number; queue: string | undefined; leaderFound: boolean }> {
    if (target.leaderOf === undefined) return { node: target.node, queue: undefined, leaderFound: false };
    const queue = this.#queues[target.leaderOf % this.#queues.length];
    const leader = queue === undefined ? undefined : await this.#cluster.leaderOf(queue);
    const node = this.#cluster.nodes.find((n) => n.name === leader);
    return node === undefined
      ? { node: target.node, queue, leaderFound: false }
      : { node: node.host.index, queue, leaderFound: true };
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
