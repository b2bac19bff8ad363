import { describe, expect, it } from 'vitest';
import type { Op, OpInput } from './history.ts';
import {
  buildReport,
  failoverTimes,
  percentile,
  recoveryTimes,
  renderMarkdown,
  resources,
} from './report.ts';

/** A report of `history` from a 1-minute, 3-node run with nothing else to say (`extra` overrides). */
function reportOf(history: Op[], extra: Partial<Parameters<typeof buildReport>[0]> = {}) {
  return buildReport({
    seed: 1,
    nodes: 3,
    minutes: 1,
    faults: ['kill'],
    ratePerSecond: 10,
    startedAt: new Date(0),
    durationS: 60,
    drained: true,
    formed: true,
    swept: 0,
    ops: history,
    checks: [],
    schedule: [],
    ...extra,
  });
}

function ops(...inputs: [number, OpInput][]): Op[] {
  return inputs.map(([time, input], index) => ({ index, time, ...input }));
}
const ok = (process: string): OpInput => ({
  type: 'ok',
  f: process.startsWith('p-') ? 'publish' : 'deliver',
  process,
});
const heal = (n: number): OpInput => ({
  type: 'info',
  f: 'heal',
  process: 'nemesis',
  value: { n, kind: 'kill' },
});
const fault = (n: number): OpInput => ({
  type: 'info',
  f: 'fault',
  process: 'nemesis',
  value: { n, kind: 'kill' },
});

describe('percentile', () => {
  it('is nearest-rank', () => {
    expect(percentile([], 50)).toBeUndefined();
    expect(percentile([5], 99)).toBe(5);
    expect(percentile([4, 1, 3, 2], 50)).toBe(2);
    expect(
      percentile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        99,
      ),
    ).toBe(99);
  });
});

describe('recovery after a heal', () => {
  it('is the time until every client process made progress again', () => {
    const history = ops(
      [0, ok('p-a')],
      [0, ok('c-a')],
      [100, fault(1)],
      [200, heal(1)],
      [250, ok('p-a')],
      [900, ok('c-a')],
      [950, ok('p-a')],
    );
    expect(recoveryTimes(history)).toEqual([
      { n: 1, kind: 'kill', ms: 700, overlapped: false, stalled: [], concurrent: false },
    ]);
  });

  it('runs into the next fault when slower than the gap, and is null, naming the stalled, when never', () => {
    const history = ops(
      [0, ok('p-a')],
      [0, ok('c-a')],
      [200, heal(1)],
      [250, ok('p-a')],
      [300, fault(2)],
      [400, ok('c-a')],
    );
    expect(recoveryTimes(history)).toEqual([
      { n: 1, kind: 'kill', ms: 200, overlapped: true, ranInto: 2, stalled: [], concurrent: false },
    ]);
    const stalled = ops([0, ok('p-a')], [0, ok('c-a')], [200, heal(1)], [250, ok('p-a')]);
    expect(recoveryTimes(stalled)).toEqual([
      { n: 1, kind: 'kill', ms: null, overlapped: false, stalled: ['c-a'], concurrent: false },
    ]);
  });
});

describe('recovery figures: clean, ran into the next fault, never', () => {
  const history = ops(
    [0, ok('p-a')],
    [0, ok('c-a')],
    [100, fault(1)],
    [200, heal(1)],
    [250, ok('p-a')],
    [300, ok('c-a')], // #1: 100 ms, clean
    [1_000, fault(2)],
    [1_100, heal(2)],
    [1_200, ok('p-a')],
    [1_400, ok('c-a')], // #2: 300 ms, clean
    [2_000, fault(3)],
    [2_100, heal(3)],
    [2_200, ok('p-a')],
    [5_000, fault(4)], // #3 has not recovered yet: it runs into #4
    [6_000, heal(4)],
    [6_100, ok('p-a')],
    [6_200, ok('c-a')], // #3: 4,100 ms (ran into #4); #4: 200 ms, clean
    [8_000, fault(5)],
    [8_100, heal(5)],
    [8_200, ok('p-a')], // #5: c-a never again
  );

  it('keeps the p50/p99 to clean recoveries, the max over all, and the late ones apart', () => {
    expect(recoveryTimes(history).map((r) => [r.n, r.ms, r.overlapped, r.ranInto])).toEqual([
      [1, 100, false, undefined],
      [2, 300, false, undefined],
      [3, 4_100, true, 4],
      [4, 200, false, undefined],
      [5, null, false, undefined],
    ]);
    const report = reportOf(history);
    const { each: _each, ...figures } = report.recovery;
    expect(figures).toEqual({
      p50Ms: 200,
      p99Ms: 300, // not 4,100: that one ran into the next fault
      maxMs: 4_100, // but nothing slow is hidden
      clean: { count: 3, p50Ms: 200, p99Ms: 300 },
      overlappedFigures: { count: 1, p50Ms: 4_100, maxMs: 4_100 },
      notRecovered: 1,
      overlapped: 1,
      concurrent: { count: 0, p50Ms: undefined, maxMs: undefined },
    });
    const markdown = renderMarkdown(report);
    expect(markdown).toContain('- #3 kill: 4100 ms (ran into #4)\n');
    expect(markdown).toContain('- #4 kill: 200 ms\n');
    expect(markdown).toContain('- #5 kill: not recovered (stalled: c-a)\n');
    expect(markdown).toContain(
      '/ max (all but concurrent, late ones included) | 200 ms / 300 ms / 4100 ms |',
    );
    expect(markdown).toContain('| heals recovered clean (in the p50 / p99) | 3 |');
    expect(markdown).toContain('(not in the p50 / p99): count, p50 / max | 1, 4100 ms / 4100 ms |');
    expect(markdown).toContain('| heals never recovered | 1 |');
  });
});

describe('recovery with overlapping faults and late clients', () => {
  it('does not wait for clients that first made progress after the heal (consumers started at the drain)', () => {
    const history = ops(
      [0, ok('p-a')],
      [100, fault(1)],
      [200, heal(1)],
      [300, ok('p-a')],
      [5_000, ok('c-a')],
    );
    expect(recoveryTimes(history).map((r) => r.ms)).toEqual([100]);
  });

  it('marks a heal made while another fault was in force, and the report keeps it out of the p50/p99', () => {
    const concurrentHeal: OpInput = {
      type: 'info',
      f: 'heal',
      process: 'nemesis',
      value: { n: 1, kind: 'slow', concurrent: true },
    };
    const history = ops(
      [0, ok('p-a')],
      [100, fault(1)],
      [150, fault(2)],
      [200, concurrentHeal],
      [9_200, ok('p-a')],
      [9_300, heal(2)],
      [9_400, ok('p-a')],
    );
    expect(recoveryTimes(history).map((r) => [r.n, r.ms, r.concurrent])).toEqual([
      [1, 9_000, true],
      [2, 100, false],
    ]);
    const report = reportOf(history, { faults: ['slow', 'kill'], overlap: true, workload: 'backlog' });
    expect(report.recovery.p99Ms).toBe(100);
    expect(report.recovery.maxMs).toBe(100);
    expect(report.recovery.concurrent).toEqual({ count: 1, p50Ms: 9_000, maxMs: 9_000 });
    expect(report.replay).toContain('--workload backlog --overlap');
    expect(renderMarkdown(report)).toContain('(another fault still in force)');
  });

  it('is invalid when a membership fault left a queue without its full replica set', () => {
    const unrestored: OpInput = {
      type: 'info',
      f: 'heal',
      process: 'nemesis',
      value: { n: 1, kind: 'membership/delete-add', restored: false },
    };
    const report = reportOf(ops([0, ok('p-a')], [10, unrestored]), { faults: ['membership'] });
    expect(report.membershipNotRestored).toBe(1);
    expect(report.valid).toBe(false);
  });
});

describe('the report', () => {
  const base = {
    seed: 5,
    nodes: 3,
    minutes: 1,
    faults: ['kill'],
    ratePerSecond: 100,
    startedAt: new Date(0),
    durationS: 70,
    drained: true,
    formed: true,
    swept: 0,
    ops: ops([0, ok('p-a')]),
    schedule: [],
  };

  it('is valid only when every checker is and the queues drained, and prints the replay command', () => {
    const check = { checker: 'order' as const, valid: true, counts: {}, problems: [] };
    expect(buildReport({ ...base, checks: [check] }).valid).toBe(true);
    expect(buildReport({ ...base, drained: false, checks: [check] }).valid).toBe(false);
    expect(buildReport({ ...base, formed: false, checks: [check] }).valid).toBe(false);
    expect(buildReport({ ...base, swept: 3, checks: [check] }).valid).toBe(false);
    const bad = buildReport({
      ...base,
      checks: [
        { ...check, valid: false, problems: [{ checker: 'order', kind: 'out-of-order', detail: 'x' }] },
      ],
    });
    expect(bad.valid).toBe(false);
    expect(renderMarkdown(bad)).toContain('# Styx chaos run: FAIL');
    expect(bad.replay).toBe('npx -y pnpm@10 chaos --nodes 3 --minutes 1 --seed 5 --faults kill --rate 100');
    expect(bad.gapMs).toEqual([4_000, 9_000]);
    expect(renderMarkdown(bad)).toContain('faults kill, quiet gap 4-9 s;');
    expect(bad.broken).toBeUndefined();
  });

  it('shows the quiet gap (--gap) in the Markdown, the JSON and the replay command', () => {
    const report = buildReport({ ...base, checks: [], gapMs: [15_000, 20_000], overlap: true });
    expect(report.gapMs).toEqual([15_000, 20_000]);
    expect(JSON.parse(JSON.stringify(report)).gapMs).toEqual([15_000, 20_000]);
    expect(renderMarkdown(report)).toContain('quiet gap 15-20 s');
    expect(report.replay).toBe(
      'npx -y pnpm@10 chaos --nodes 3 --minutes 1 --seed 5 --faults kill --rate 100 --overlap --gap 15-20',
    );
  });

  it("of a deliberately broken run says whether the break's own checker caught it", () => {
    const broken = { ...base, faults: [], testBreak: 'reorder-deliveries' as const };
    const valid = (checker: 'order' | 'total-queue') => ({ checker, valid: true, counts: {}, problems: [] });
    const missed = buildReport({
      ...broken,
      checks: [valid('order'), { ...valid('total-queue'), valid: false }],
    });
    expect(missed.broken).toEqual({ name: 'reorder-deliveries', checker: 'order', caught: false });
    expect(renderMarkdown(missed)).toContain('NOT CAUGHT by order');
    const caught = buildReport({ ...broken, checks: [{ ...valid('order'), valid: false }] });
    expect(caught.broken?.caught).toBe(true);
    expect(caught.replay).toContain('--faults none --rate 100 --break reorder-deliveries');
  });
});

describe('failover after a SIGKILL of a queue leader', () => {
  const W1 = 'chaos.work.1';
  const W2 = 'chaos.work.2';
  const invoke = (process: string, seq: number, queue: string): OpInput => ({
    type: 'invoke',
    f: 'publish',
    process,
    queue,
    id: `${process}:${seq}`,
  });
  const confirm = (process: string, seq: number, queue: string): OpInput => ({
    type: 'ok',
    f: 'publish',
    process,
    queue,
    id: `${process}:${seq}`,
  });
  const deliver = (process: string, id: string, queue: string, redelivered = false): OpInput => ({
    type: 'ok',
    f: 'deliver',
    process,
    queue,
    id,
    redelivered,
  });
  const kill = (n: number, queue: string | undefined, extra: Record<string, unknown> = {}): OpInput => ({
    type: 'info',
    f: 'fault',
    process: 'nemesis',
    value: { n, kind: 'kill', nodes: 'n2', ...(queue === undefined ? {} : { queue }), ...extra },
  });
  const healOf = (n: number): OpInput => ({
    type: 'info',
    f: 'heal',
    process: 'nemesis',
    value: { n, kind: 'kill' },
  });
  /** Both queues busy before the kill: p-w1 → c-w1 on work.1, p-w2 → c-w2 on work.2. */
  const before: [number, OpInput][] = [
    [0, invoke('p-w1', 0, W1)],
    [0, invoke('p-w2', 0, W2)],
    [10, confirm('p-w1', 0, W1)],
    [10, confirm('p-w2', 0, W2)],
    [20, deliver('c-w1', 'p-w1:0', W1)],
    [20, deliver('c-w2', 'p-w2:0', W2)],
    [900, invoke('p-w1', 1, W1)], // on its way when the leader dies
  ];
  const run = (...rest: [number, OpInput][]) => failoverTimes(ops(...before, ...rest));

  it("waits for every client of the killed leader's queue, and only for new progress", () => {
    const [failover] = run(
      [1_000, kill(1, W1)],
      [1_001, confirm('p-w1', 1, W1)], // invoked before the kill: the dead leader's, not counted
      [1_002, deliver('c-w1', 'p-w1:1', W1)], // published before the kill, not a redelivery
      [1_500, invoke('p-w1', 2, W1)],
      [2_500, confirm('p-w1', 2, W1)],
      [2_600, deliver('c-w1', 'p-w1:2', W1)],
      [3_000, healOf(1)],
    );
    expect(failover).toEqual({
      n: 1,
      queue: W1,
      node: 'n2',
      ms: 1_600,
      clients: ['c-w1', 'p-w1'],
      stalled: [],
      overlapped: false,
      afterRestart: false,
    });
  });

  it('does not count a confirm the dead leader had already sent', () => {
    const failovers = run(
      [1_000, kill(1, W1)],
      [1_001, confirm('p-w1', 1, W1)], // invoked at 900: not the new leader's doing
      [1_050, deliver('c-w1', 'p-w1:0', W1, true)],
      [1_100, invoke('p-w1', 2, W1)],
      [2_500, confirm('p-w1', 2, W1)],
    );
    expect(failovers.map((f) => f.ms)).toEqual([1_500]);
  });

  it('does not count progress on another queue, nor wait for its stalled clients', () => {
    // c-w1 stalls while work.2's clients go on: never, naming c-w1.
    const stalled = run(
      [1_000, kill(1, W1)],
      [1_100, invoke('p-w2', 1, W2)],
      [1_200, confirm('p-w2', 1, W2)],
      [1_300, deliver('c-w2', 'p-w2:1', W2)],
      [1_500, invoke('p-w1', 2, W1)],
      [2_500, confirm('p-w1', 2, W1)],
      [3_000, healOf(1)],
      [4_000, invoke('p-w2', 2, W2)],
      [4_100, confirm('p-w2', 2, W2)],
    );
    expect(stalled.map((f) => [f.ms, f.clients, f.stalled])).toEqual([[null, ['c-w1', 'p-w1'], ['c-w1']]]);
    // work.2's clients stall while work.1's go on: work.1's leader failed over, in 1,600 ms.
    const other = run(
      [1_000, kill(1, W1)],
      [1_500, invoke('p-w1', 2, W1)],
      [2_500, confirm('p-w1', 2, W1)],
      [2_600, deliver('c-w1', 'p-w1:2', W1)],
    );
    expect(other.map((f) => [f.ms, f.stalled])).toEqual([[1_600, []]]);
  });

  it("counts a consumer's redelivery, and flags one that ran into the next fault or the restart", () => {
    const [failover] = run(
      [1_000, kill(1, W1)],
      [1_400, deliver('c-w1', 'p-w1:0', W1, true)],
      [3_000, healOf(1)],
      [4_000, kill(2, undefined)],
      [4_100, invoke('p-w1', 2, W1)],
      [4_500, confirm('p-w1', 2, W1)],
    );
    expect(failover).toMatchObject({ n: 1, ms: 3_500, overlapped: true, ranInto: 2, afterRestart: true });
  });

  it('skips kills without a queue, kill-each, and does not measure an unknown leader or a queue without clients', () => {
    const failovers = run(
      [1_000, kill(1, undefined)],
      [
        2_000,
        { type: 'info', f: 'fault', process: 'nemesis', value: { n: 2, kind: 'kill-each', queue: W1 } },
      ],
      [3_000, kill(3, W1, { leaderUnknown: true })],
      [4_000, kill(4, 'chaos.ttl.dlq')],
    );
    expect(failovers.map((f) => [f.n, f.ms, f.skipped])).toEqual([
      [3, null, 'leader unknown'],
      [4, null, 'no clients'],
    ]);
  });

  it('reports p50/p99 over the clean ones, the max over all, the rest apart', () => {
    const history = ops(
      ...before,
      [1_000, kill(1, W1)],
      [1_100, invoke('p-w1', 2, W1)],
      [1_200, confirm('p-w1', 2, W1)],
      [1_300, deliver('c-w1', 'p-w1:2', W1)], // #1: 300 ms
      [2_000, healOf(1)],
      [10_000, kill(2, W1)],
      [10_100, invoke('p-w1', 3, W1)],
      [10_600, confirm('p-w1', 3, W1)],
      [11_000, deliver('c-w1', 'p-w1:3', W1)], // #2: 1,000 ms
      [12_000, healOf(2)],
      [20_000, kill(3, W2)],
      [25_000, healOf(3)],
      [30_000, kill(4, W1, { leaderUnknown: true })],
      [30_100, invoke('p-w2', 1, W2)],
      [30_200, confirm('p-w2', 1, W2)],
      [30_300, deliver('c-w2', 'p-w2:1', W2)], // #3: 10,300 ms, ran into #4
      [31_000, healOf(4)],
      [40_000, kill(5, W2)], // #5: never (c-w2, p-w2 stall)
    );
    const report = reportOf(history);
    const { each, ...figures } = report.failover;
    expect(figures).toEqual({
      p50Ms: 300,
      p99Ms: 1_000,
      maxMs: 10_300,
      clean: { count: 2, p50Ms: 300, p99Ms: 1_000 },
      overlappedFigures: { count: 1, p50Ms: 10_300, maxMs: 10_300 },
      notRecovered: 1,
      notMeasured: 1,
    });
    expect(each.map((f) => f.n)).toEqual([1, 2, 3, 4, 5]);
    const markdown = renderMarkdown(report);
    expect(markdown).toContain("## Failover after a queue leader's SIGKILL");
    expect(markdown).toContain(
      "| failover after a queue leader's SIGKILL, p50 / p99 (clean) / max (all) | 300 ms / 1000 ms / 10300 ms |",
    );
    expect(markdown).toContain('- #1 chaos.work.1, n2 killed: 300 ms\n');
    expect(markdown).toContain('- #3 chaos.work.2, n2 killed: 10300 ms (after the restart) (ran into #4)\n');
    expect(markdown).toContain('- #4 chaos.work.1, n2 killed: not measured (leader unknown)\n');
    expect(markdown).toContain('- #5 chaos.work.2, n2 killed: never (stalled: c-w2, p-w2)\n');
    expect(JSON.parse(JSON.stringify(report)).failover.clean).toEqual({ count: 2, p50Ms: 300, p99Ms: 1_000 });
  });
});

describe('resources', () => {
  it('keeps the peaks of the samples, skipping nodes that were down', () => {
    const sample = (lagMs: number, n1: unknown): OpInput => ({
      type: 'info',
      f: 'sample',
      process: 'harness',
      value: { lagMs, nodes: { n1 } },
    });
    const history = ops(
      [0, sample(3, { cpu: 50, rssMiB: 200, state: 'S' })],
      [5, sample(900, 'down')],
      [10, sample(7, { cpu: 99.5, rssMiB: 150, state: 'R' })],
    );
    expect(resources(history)).toEqual({
      harnessLagMaxMs: 900,
      nodes: { n1: { cpuMax: 99.5, rssMaxMiB: 200 } },
    });
  });
});
