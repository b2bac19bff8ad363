import { describe, expect, it } from 'vitest';
import {
  formatBytes,
  formatCount,
  formatCpu,
  formatMs,
  formatNodeCpu,
  formatRatio,
  textTable,
} from './format.ts';

describe('format', () => {
  it('formats ratios with enough digits to tell tiny ones apart', () => {
    expect(formatRatio(1.8449)).toBe('×1.84');
    expect(formatRatio(19.83)).toBe('×19.8');
    expect(formatRatio(0.000141)).toBe('×0.00014');
    expect(formatRatio(0)).toBe('×0.00');
    expect(formatRatio(null)).toBe('–');
  });

  it('formats durations, bytes, counts and CPU shares', () => {
    expect([0.423, 12.34, 450.4, 1234, 59_900].map(formatMs)).toEqual([
      '0.42 ms',
      '12.3 ms',
      '450 ms',
      '1.23 s',
      '59.9 s',
    ]);
    expect([812, 1536, 3.2 * 2 ** 20].map(formatBytes)).toEqual(['812 B', '1.5 KiB', '3.2 MiB']);
    expect(formatCount(12345.6)).toBe('12,346');
    expect(formatCount(0.04213)).toBe('0.0421');
    expect(formatCpu(4200, 5000)).toBe('4.2 s (84 %)');
    expect(formatCpu(null, 5000)).toBe('?');
  });

  it("splits a cluster's CPU per message by each node's share, or gives each node's seconds", () => {
    expect(formatNodeCpu([2000, 1000, 1000], 60)).toBe('30.0 / 15.0 / 15.0 µs/msg');
    expect(formatNodeCpu([2000, 1500], undefined)).toBe('2.0 / 1.5 s');
    // A single node, no reading, or no CPU at all: nothing to split (never a division by zero).
    expect(formatNodeCpu([2000], 60)).toBe('');
    expect(formatNodeCpu(undefined, 60)).toBe('');
    expect(formatNodeCpu([0, 0], 60)).toBe('0.0 / 0.0 s');
  });

  it('pads table columns to their widest cell', () => {
    expect(textTable(['a', 'bb'], [['ccc', 'd']])).toBe('a    bb\n---  --\nccc  d');
  });
});
