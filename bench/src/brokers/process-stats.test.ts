import { describe, expect, it } from 'vitest';
import type { ProcStat } from './process-stats.ts';
import {
  parseSmapsRollup,
  parseStat,
  parseStatCpuMs,
  parseStatusMemory,
  treeCpuMs,
} from './process-stats.ts';

/** A stat line with the given pid, ppid, utime, stime, cutime and cstime (other fields filler). */
function statLine(pid: number, comm: string, ppid: number, ut: number, st: number, cut = 0, cst = 0): string {
  return `${pid} (${comm}) S ${ppid} 2 3 4 5 6 7 8 9 10 ${ut} ${st} ${cut} ${cst} 20 0 30 0 100 200 300`;
}

describe('parseStatCpuMs', () => {
  it('adds utime and stime, counting fields after the command name', () => {
    // Fields 14 and 15 are 250 and 50 ticks; the command name holds a space and a parenthesis.
    const stat = '4242 (beam (smp) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 30 0 100 200 300';
    expect(parseStatCpuMs(stat, 100)).toBe(3000);
  });

  it('gives undefined for a line it cannot read', () => {
    expect(parseStatCpuMs('garbage', 100)).toBeUndefined();
    expect(parseStatCpuMs('1 (x) S 1', 100)).toBeUndefined();
  });
});

describe('parseStat', () => {
  it('reads pid, ppid, own and reaped-children ticks', () => {
    expect(parseStat(statLine(77, 'erl_child_setup', 42, 5, 3, 7, 1))).toEqual({
      pid: 77,
      ppid: 42,
      ownTicks: 8,
      reapedChildTicks: 8,
    });
  });

  it('counts fields after the last parenthesis, whatever the command name holds', () => {
    expect(parseStat(statLine(9, ') S 1 2 (', 3, 10, 20))?.ppid).toBe(3);
    expect(parseStat(statLine(9, ') S 1 2 (', 3, 10, 20))?.ownTicks).toBe(30);
  });

  it('gives undefined for a truncated or non-numeric line', () => {
    expect(parseStat('12 (x) S 1 2 3')).toBeUndefined();
    expect(parseStat('x (y) S a b c')).toBeUndefined();
  });
});

describe('treeCpuMs', () => {
  const stats: ProcStat[] = [
    { pid: 1, ppid: 0, ownTicks: 1000, reapedChildTicks: 0 }, // init: never counted
    { pid: 100, ppid: 1, ownTicks: 300, reapedChildTicks: 20 }, // beam.smp, a helper already reaped
    { pid: 101, ppid: 100, ownTicks: 5, reapedChildTicks: 0 }, // erl_child_setup
    { pid: 102, ppid: 101, ownTicks: 2, reapedChildTicks: 0 }, // inet_gethost
    { pid: 200, ppid: 1, ownTicks: 50, reapedChildTicks: 0 }, // a second node
    { pid: 300, ppid: 1, ownTicks: 999, reapedChildTicks: 0 }, // an unrelated process
  ];

  it('adds the roots and all their descendants, with reaped children, in ms at 100 ticks/s', () => {
    expect(treeCpuMs(stats, [100], 100)).toBe((300 + 20 + 5 + 2) * 10);
    expect(treeCpuMs(stats, [100, 200], 100)).toBe((300 + 20 + 5 + 2 + 50) * 10);
  });

  it('converts with the clock tick rate given', () => {
    expect(treeCpuMs(stats, [200], 1000)).toBe(50);
  });

  it('counts a process once when a root descends from another root', () => {
    expect(treeCpuMs(stats, [100, 101], 100)).toBe((300 + 20 + 5 + 2) * 10);
  });

  it('gives undefined when a root is gone', () => {
    expect(treeCpuMs(stats, [100, 4242], 100)).toBeUndefined();
  });
});

describe('parseStatusMemory', () => {
  it('reads VmRSS, RssAnon and RssFile in bytes', () => {
    const status = 'Name:\tnode\nVmRSS:\t  2048 kB\nRssAnon:\t  1536 kB\nRssFile:\t   512 kB\n';
    expect(parseStatusMemory(status)).toEqual({ rss: 2048 * 1024, anon: 1536 * 1024, file: 512 * 1024 });
  });

  it('gives undefined without VmRSS (a zombie has none)', () => {
    expect(parseStatusMemory('Name:\tx\nState:\tZ (zombie)\n')).toBeUndefined();
  });
});

describe('parseSmapsRollup', () => {
  it('splits Rss into anonymous and file-backed, in bytes', () => {
    const text =
      '55d0-7ffd ---p 00000000 00:00 0    [rollup]\nRss:              300000 kB\nPss:  290000 kB\n' +
      'Pss_Anon:  100000 kB\nAnonymous:        120000 kB\nSwap: 0 kB\n';
    expect(parseSmapsRollup(text)).toEqual({ rss: 300000 * 1024, anon: 120000 * 1024, file: 180000 * 1024 });
  });

  it('gives undefined without an Rss line', () => {
    expect(parseSmapsRollup('nothing here')).toBeUndefined();
  });
});
