import { describe, expect, it } from 'vitest';
import { parseStatCpuMs, parseStatusMemory } from './process-stats.ts';

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

describe('parseStatusMemory', () => {
  it('reads VmRSS, RssAnon and RssFile in bytes', () => {
    const status = 'Name:\tnode\nVmRSS:\t  2048 kB\nRssAnon:\t  1536 kB\nRssFile:\t   512 kB\n';
    expect(parseStatusMemory(status)).toEqual({ rss: 2048 * 1024, anon: 1536 * 1024, file: 512 * 1024 });
  });

  it('gives undefined without VmRSS (a zombie has none)', () => {
    expect(parseStatusMemory('Name:\tx\nState:\tZ (zombie)\n')).toBeUndefined();
  });
});
