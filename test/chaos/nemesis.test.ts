import { describe, expect, it } from 'vitest';
import { parseOptions } from './args.ts';
import { UsageError } from './errors.ts';
import { describeFault, FAULT_KINDS, planSchedule } from './nemesis.ts';
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
  const options = { seed: 99, faults: [...FAULT_KINDS], nodes: 5, durationMs: 10 * 60_000, queues: 6 };

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
    expect(new Set(schedule.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
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

  it('describes each fault on one line', () => {
    const lines = planSchedule(options).map(describeFault);
    expect(lines[0]).toMatch(/^#1 \d+\.\ds \+\d+\.\ds /);
    expect(lines.some((l) => l.includes('kbit/s'))).toBe(true);
  });
});

describe('the command line', () => {
  const parse = (...args: string[]) => parseOptions(args, () => 1234);

  it('has defaults, and takes a leading -- from pnpm', () => {
    expect(parse()).toMatchObject({ nodes: 3, minutes: 2, seed: 1234, faults: FAULT_KINDS, rate: 240 });
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

  it.each([
    [['--nodes', '4']],
    [['--minutes', '0']],
    [['--seed', '-1']],
    [['--faults', 'kill,fire']],
    [['--bogus']],
    [['--break', 'confirm-never']],
  ])('refuses %j', (args) => {
    expect(() => parse(...args)).toThrow(UsageError);
  });
});
