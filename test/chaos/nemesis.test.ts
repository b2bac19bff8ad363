import { describe, expect, it } from 'vitest';
import { parseOptions, USAGE } from './args.ts';
import type { ChaosCluster } from './cluster.ts';
import { UsageError } from './errors.ts';
import { History } from './history.ts';
import type { PlannedFault } from './nemesis.ts';
import {
  DEFAULT_FAULTS,
  DEFAULT_GAP_MS,
  describeFault,
  FAULT_KINDS,
  faultClass,
  formatGap,
  Nemesis,
  planSchedule,
} from './nemesis.ts';
import type { ChaosNetwork } from './network.ts';
import { seededRandom } from './random.ts';

describe('the seeded generator', () => {
  it('replays from its seed, and nearby seeds differ', () => {
    const draw = (seed: number) => Array.from({ length: 5 }, seededRandom(seed).next);
    expect(draw(42)).toEqual(draw(42));
    expect(draw(1)).not.toEqual(draw(2));
    const r = seededRandom(7);
    for (let i = 0; i < 1000; i++) {
      const x = r.between(3, 5);
      expect(x >= 3 && x <= 5 && Number.isInteger(x)).toBe(true);
    }
  });
});

describe('the schedule', () => {
  const options = { seed: 99, faults: [...DEFAULT_FAULTS], nodes: 5, durationMs: 10 * 60_000, queues: 6 };

  it('is the same for the same seed and options (a run replays its faults)', () => {
    expect(planSchedule(options)).toEqual(planSchedule(options));
    expect(planSchedule({ ...options, seed: 100 })).not.toEqual(planSchedule(options));
  });

  it('has one fault at a time, with quiet gaps, all ending before the workload does', () => {
    const schedule = planSchedule(options);
    expect(schedule.length).toBeGreaterThan(20);
    let end = 0;
    for (const fault of schedule) {
      expect(fault.at).toBeGreaterThanOrEqual(end + 4_000);
      end = fault.at + fault.durationMs;
    }
    expect(end).toBeLessThanOrEqual(options.durationMs - 3_000);
  });

  it('uses only the asked-for kinds, every one of them over a long run, and prefers leaders', () => {
    const schedule = planSchedule(options);
    expect(new Set(schedule.map((f) => f.kind))).toEqual(new Set(DEFAULT_FAULTS));
    expect(new Set(schedule.filter((f) => f.kind === 'partition').map((f) => f.shape)).size).toBe(4);
    const aimed = schedule.filter((f) => f.target.leaderOf !== undefined).length;
    expect(aimed / schedule.length).toBeGreaterThan(0.5);
    expect(new Set(planSchedule({ ...options, faults: ['pause'] }).map((f) => f.kind))).toEqual(
      new Set(['pause']),
    );
    expect(planSchedule({ ...options, faults: [] })).toEqual([]);
  });

  it('splits halves into two non-empty sides covering every node once', () => {
    for (const fault of planSchedule(options).filter((f) => f.shape === 'halves' || f.shape === 'flapping')) {
      const [a, b] = fault.groups ?? [];
      expect(a?.length).toBe(2);
      expect(b?.length).toBe(3);
      expect([...(a ?? []), ...(b ?? [])].sort()).toEqual([1, 2, 3, 4, 5]);
    }
  });

  it('plans kill-each to last every node down and back, and membership with one change each', () => {
    const schedule = planSchedule({ ...options, nodes: 3, faults: ['kill-each', 'membership'] });
    const kinds = new Set(schedule.map((f) => f.kind));
    expect(kinds).toEqual(new Set(['kill-each', 'membership']));
    for (const fault of schedule.filter((f) => f.kind === 'kill-each')) {
      expect(fault.downMs).toBeGreaterThanOrEqual(3_000);
      expect(fault.downMs).toBeLessThanOrEqual(6_000);
      expect(fault.durationMs).toBe(3 * ((fault.downMs ?? 0) + 4_000));
    }
    const changes = new Set(schedule.filter((f) => f.kind === 'membership').map((f) => f.change));
    expect(changes).toEqual(new Set(['delete-add', 'shrink-grow', 'rebalance', 'leader-transfer']));
    expect(describeFault(schedule.find((f) => f.kind === 'kill-each') as never)).toMatch(
      /every node in turn/,
    );
  });

  it('leaves the default schedule as it was when the new kinds exist (a seed replays its old faults)', () => {
    // CI's seed 101, as planned before kill-each, membership and overlap existed.
    const ci = planSchedule({
      seed: 101,
      faults: [...DEFAULT_FAULTS],
      nodes: 3,
      durationMs: 120_000,
      queues: 6,
    });
    expect(ci.slice(0, 3).map(describeFault)).toEqual([
      '#1 6.6s +8.2s kill n1',
      '#2 22.3s +9.9s partition one-way of leader of queue #1',
      '#3 36.5s +5.7s pause leader of queue #0',
    ]);
    expect(planSchedule({ ...options, overlap: false })).toEqual(planSchedule(options));
  });

  it('with overlap, starts a second fault of another class while the first is in force', () => {
    const all = { ...options, faults: [...FAULT_KINDS], overlap: true };
    const schedule = planSchedule(all);
    expect(planSchedule(all)).toEqual(schedule);
    const seconds = schedule.filter((f) => f.overlaps !== undefined);
    expect(seconds.length).toBeGreaterThan(5);
    expect(seconds.length).toBeLessThan(schedule.length / 2);
    for (const second of seconds) {
      const first = schedule.find((f) => f.n === second.overlaps);
      if (first === undefined) throw new Error('no first fault');
      expect(second.n).toBe(first.n + 1);
      expect(faultClass(second.kind)).not.toBe(faultClass(first.kind));
      expect(second.at).toBeGreaterThan(first.at);
      expect(second.at).toBeLessThan(first.at + first.durationMs);
      expect(describeFault(second)).toContain(`(during #${first.n})`);
    }
    // Every pair (or single fault) ends, with a quiet gap, before the next one starts.
    let end = 0;
    for (const fault of schedule) {
      if (fault.overlaps === undefined) expect(fault.at).toBeGreaterThanOrEqual(end + 4_000);
      end = Math.max(end, fault.at + fault.durationMs);
    }
    expect(end).toBeLessThanOrEqual(all.durationMs - 3_000);
    // Only the asked-for kinds: a network fault alone cannot overlap another network fault.
    const network = planSchedule({ ...all, faults: ['partition', 'slow'] });
    expect(network.some((f) => f.overlaps !== undefined)).toBe(false);
  });

  it('keeps the asked-for quiet gap before the first fault and between faults (--gap)', () => {
    // The default gap passed explicitly plans what no gap plans: CI's seeds keep their schedules.
    expect(planSchedule({ ...options, gapMs: DEFAULT_GAP_MS })).toEqual(planSchedule(options));
    for (const overlap of [false, true]) {
      const schedule = planSchedule({
        ...options,
        faults: [...FAULT_KINDS],
        overlap,
        gapMs: [15_000, 20_000],
      });
      expect(schedule.length).toBeGreaterThan(10);
      let end = 0;
      for (const fault of schedule) {
        if (fault.overlaps === undefined) {
          expect(fault.at - end).toBeGreaterThanOrEqual(15_000);
          expect(fault.at - end).toBeLessThanOrEqual(20_000);
        }
        end = Math.max(end, fault.at + fault.durationMs);
      }
    }
    expect(formatGap([15_000, 20_000])).toBe('15-20 s');
    expect(formatGap(DEFAULT_GAP_MS)).toBe('4-9 s');
  });

  it('describes each fault on one line', () => {
    const lines = planSchedule(options).map(describeFault);
    expect(lines[0]).toMatch(/^#1 \d+\.\ds \+\d+\.\ds /);
    expect(lines.some((l) => l.includes('kbit/s'))).toBe(true);
  });
});

describe('the nemesis at run time', () => {
  /** A cluster of three that only pretends: n2 leads chaos.work.1, nobody knows chaos.rej's leader. */
  function fake() {
    const nodes = [1, 2, 3].map((index) => ({
      name: `n${index}`,
      host: { index },
      state: 'running' as 'running' | 'down' | 'paused',
    }));
    const node = (name: string) => nodes.find((n) => n.name === name) as (typeof nodes)[number];
    const killed: string[] = [];
    const cluster = {
      nodes,
      leaderOf: async (queue: string) => (queue === 'chaos.work.1' ? 'n2' : undefined),
      kill: async (name: string) => {
        killed.push(name);
        node(name).state = 'down';
      },
      restart: async (name: string) => {
        node(name).state = 'running';
      },
      pause: (name: string) => {
        node(name).state = 'paused';
      },
      resume: (name: string) => {
        node(name).state = 'running';
      },
    };
    const network = { heal: async () => {} };
    return {
      cluster: cluster as unknown as ChaosCluster,
      network: network as unknown as ChaosNetwork,
      killed,
    };
  }
  const planned = (n: number, kind: 'kill' | 'pause', leaderOf: number | undefined): PlannedFault => ({
    n,
    at: 0,
    kind,
    durationMs: 1,
    target: { leaderOf, node: 3 },
  });

  it('names the queue whose leader a kill aimed at, and says when that leader was not known', async () => {
    const { cluster, network, killed } = fake();
    const history = new History();
    const queues = ['chaos.work.1', 'chaos.rej'];
    const schedule = [
      planned(1, 'kill', 0),
      planned(2, 'kill', 1),
      planned(3, 'kill', undefined),
      planned(4, 'pause', 0),
    ];
    await new Nemesis(cluster, network, history, schedule, queues).run(new AbortController().signal);
    expect(killed).toEqual(['n2', 'n3', 'n3']);
    const faults = history.ops.filter((op) => op.f === 'fault').map((op) => op.value);
    expect(faults).toEqual([
      { n: 1, kind: 'kill', nodes: 'n2', queue: 'chaos.work.1' },
      { n: 2, kind: 'kill', nodes: 'n3', queue: 'chaos.rej', leaderUnknown: true },
      { n: 3, kind: 'kill', nodes: 'n3' },
      { n: 4, kind: 'pause', nodes: 'n2' },
    ]);
    expect(history.ops.filter((op) => op.f === 'heal').map((op) => (op.value as { n: number }).n)).toEqual([
      1, 2, 3, 4,
    ]);
  });
});

describe('Nemesis with a least quiet time after each heal (--gap)', () => {
  function fakeCluster(restartMs: number) {
    const nodes = [1, 2, 3].map((index) => ({
      name: `n${index}`,
      host: { index },
      state: 'running' as 'running' | 'down' | 'paused',
    }));
    const cluster = {
      nodes,
      leaderOf: async () => undefined,
      kill: async () => {},
      // A restart slower than planned: the heal ends late.
      restart: () => new Promise<void>((resolve) => setTimeout(resolve, restartMs)),
      pause: () => {},
      resume: () => {},
    };
    return {
      cluster: cluster as unknown as ChaosCluster,
      network: { heal: async () => {} } as unknown as ChaosNetwork,
    };
  }
  const fault = (n: number, at: number, durationMs: number): PlannedFault => ({
    n,
    at,
    kind: 'kill',
    durationMs,
    target: { leaderOf: undefined, node: 1 },
  });
  const times = (history: History, f: string) => history.ops.filter((op) => op.f === f).map((op) => op.time);

  it('starts the next fault no sooner than the quiet time after the last heal, pushing the rest back', async () => {
    const { cluster, network } = fakeCluster(60);
    const history = new History();
    // Planned back to back; the first heal takes 60 ms longer than planned.
    const schedule = [fault(1, 0, 10), fault(2, 20, 10), fault(3, 40, 200)];
    await new Nemesis(cluster, network, history, schedule, [], 50).run(new AbortController().signal);
    const [heal1] = times(history, 'heal');
    const [, start2] = times(history, 'fault');
    expect((start2 as number) - (heal1 as number)).toBeGreaterThanOrEqual(50);
  });

  it('without it, the next fault starts at its planned time even right after a late heal', async () => {
    const { cluster, network } = fakeCluster(60);
    const history = new History();
    const schedule = [fault(1, 0, 10), fault(2, 20, 10)];
    await new Nemesis(cluster, network, history, schedule, []).run(new AbortController().signal);
    const [heal1] = times(history, 'heal');
    const [, start2] = times(history, 'fault');
    expect((start2 as number) - (heal1 as number)).toBeLessThan(50);
  });

  it('does not run a pushed-back fault that would end after the planned schedule', async () => {
    const { cluster, network } = fakeCluster(60);
    const history = new History();
    // The schedule ends at 120 ms; pushed back past the first heal + 100 ms, #2 would end later.
    const schedule = [fault(1, 0, 10), fault(2, 100, 20)];
    await new Nemesis(cluster, network, history, schedule, [], 100).run(new AbortController().signal);
    expect(history.ops.filter((op) => op.f === 'fault').map((op) => (op.value as { n: number }).n)).toEqual([
      1,
    ]);
  });
});

describe('the command line', () => {
  const parse = (...args: string[]) => parseOptions(args, () => 1234);

  it('has defaults, and takes a leading -- from pnpm', () => {
    expect(parse()).toMatchObject({
      nodes: 3,
      minutes: 2,
      seed: 1234,
      faults: DEFAULT_FAULTS,
      rate: 240,
      overlap: false,
      workload: 'steady',
      gapMs: [4_000, 9_000],
    });
    expect(parse('--faults', 'all').faults).toEqual(FAULT_KINDS);
    expect(parse('--workload', 'backlog', '--overlap', '--faults', 'kill-each,membership')).toMatchObject({
      workload: 'backlog',
      rate: 480,
      overlap: true,
      faults: ['kill-each', 'membership'],
      compactEvery: 2000,
    });
    expect(parse().compactEvery).toBeUndefined();
    expect(parse('--workload', 'backlog', '--compact-every', '0').compactEvery).toBeUndefined();
    expect(parse('--compact-every', '500').compactEvery).toBe(500);
    expect(
      parse('--', '--nodes', '5', '--seed', '7', '--faults', 'kill,slow', '--minutes', '0.5'),
    ).toMatchObject({
      nodes: 5,
      seed: 7,
      faults: ['kill', 'slow'],
      minutes: 0.5,
    });
    expect(parse('--faults', 'none').faults).toEqual([]);
    expect(parse().break).toBeUndefined();
    expect(parse('--break', 'reorder-deliveries').break).toBe('reorder-deliveries');
  });

  it('takes --gap MIN-MAX in seconds, and shows it in the help', () => {
    expect(parse('--gap', '15-20').gapMs).toEqual([15_000, 20_000]);
    expect(parse('--gap', '0.5-2.25').gapMs).toEqual([500, 2_250]);
    expect(parse('--gap', '7-7').gapMs).toEqual([7_000, 7_000]);
    expect(parse('--gap', ' 15 - 20 ').gapMs).toEqual([15_000, 20_000]);
    expect(USAGE).toMatch(/--gap MIN-MAX .*default 4-9/);
  });

  it.each([
    ['15'],
    ['20-15'],
    ['0-5'],
    ['-5-10'],
    ['a-b'],
    ['15-'],
    ['15-20-25'],
    [''],
    ['1e3-2e3'],
  ])('refuses --gap %j', (gap) => {
    expect(() => parse('--gap', gap)).toThrow(UsageError);
  });

  it.each([
    [['--nodes', '4']],
    [['--minutes', '0']],
    [['--seed', '-1']],
    [['--faults', 'kill,fire']],
    [['--bogus']],
    [['--break', 'confirm-never']],
    [['--workload', 'deep']],
    [['--overlap', 'yes']],
    [['--compact-every', '-5']],
    [['--gap']],
  ])('refuses %j', (args) => {
    expect(() => parse(...args)).toThrow(UsageError);
  });
});
