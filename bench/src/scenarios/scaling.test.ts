import { describe, expect, it } from 'vitest';
import { selectCases } from './registry.ts';
import { spreadQueues, windowPerPublisher } from './scaling.ts';
import { FULL_SIZES, QUICK_SIZES } from './sizes.ts';

describe('sweep points', () => {
  const point = { queues: 1, publishers: 1, bodyBytes: 1024, nodes: 1 };

  it('shares 1,000 in flight among the publishers, at least one each', () => {
    expect(windowPerPublisher(point)).toBe(1000);
    expect(windowPerPublisher({ ...point, publishers: 10 })).toBe(100);
    expect(windowPerPublisher({ ...point, publishers: 1000 })).toBe(1);
    expect(windowPerPublisher({ ...point, publishers: 3000 })).toBe(1);
  });

  it('caps the bytes in flight at 64 MiB', () => {
    expect(windowPerPublisher({ ...point, bodyBytes: 64 * 1024 })).toBe(1000);
    expect(windowPerPublisher({ ...point, bodyBytes: 1024 * 1024 })).toBe(64);
    expect(windowPerPublisher({ ...point, bodyBytes: 256 * 1024 * 1024 })).toBe(1);
  });

  it('spreads queues round-robin over the publishers, every publisher getting one', () => {
    expect(spreadQueues(['a', 'b', 'c', 'd', 'e'], 2)).toEqual([
      ['a', 'c', 'e'],
      ['b', 'd'],
    ]);
    expect(spreadQueues(['a'], 3)).toEqual([['a'], ['a'], ['a']]);
  });
});

describe('selecting the new scenarios', () => {
  it('leaves h–n out of a run without names, and runs them by group or letter', () => {
    const ids = (names: string[], sizes = QUICK_SIZES) => selectCases(names, sizes).map((c) => c.id);
    expect(ids([]).some((id) => /^[h-n]\./.test(id))).toBe(false);
    expect(ids(['scaling'])).toEqual([
      'h.queues.1',
      'h.queues.10',
      'h.queues.100',
      'i.connections.1',
      'i.connections.10',
      'i.connections.100',
      'j.size.64',
      'j.size.1024',
      'j.size.65536',
      'j.size.1048576',
      'k.nodes.1',
      'k.nodes.3',
    ]);
    expect(ids(['h'], FULL_SIZES).at(-1)).toBe('h.queues.1000');
    expect(ids(['k'], FULL_SIZES).at(-1)).toBe('k.nodes.5');
    expect(ids(['restart', 'soak', 'idle-queues'])).toEqual(['l.restart', 'm.soak', 'n.idle']);
    expect(selectCases(['k.nodes.3'], QUICK_SIZES)[0]?.nodes).toBe(3);
  });
});
