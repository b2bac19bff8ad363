import type { BasicProperties, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { isCycle, splitCycles } from './cycle.ts';
import type { DeadLetteredCopy, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import type { DeadLetterReason } from './dead-letter-reason.ts';
import { message } from './test-support.ts';

const T0 = 1_795_308_382;

/**
 * Queue `queue` dead-letters `msg` to the default exchange ('') with `dlk` (or the message's own
 * key); the default exchange routes a key to the queue of that name. Returns the copy and its
 * targets after the cycle check.
 */
function deadLetterViaDefault(
  msg: DeadLetterMessage,
  queue: string,
  reason: DeadLetterReason,
  dlk: string | undefined,
): { copy: DeadLetteredCopy; deliver: readonly string[]; dropped: readonly string[] } {
  const copy = deadLetterCopy({ message: msg, queue, reason, dlx: '', dlk, timeSeconds: T0 });
  const targets = [...new Set(copy.routingKeys)];
  return { copy, ...splitCycles(copy.properties, targets) };
}

function withXDeath(values: FieldValue[]): BasicProperties {
  return { headers: { entries: [{ key: 'x-death', value: { array: { values } } }] } };
}

function death(queue: string, reason: string): FieldValue {
  return {
    table: {
      entries: [
        { key: 'queue', value: { longStr: queue } },
        { key: 'reason', value: { longStr: reason } },
      ],
    },
  };
}

describe('cycles: a → a through the default exchange without a DLK', () => {
  const published = message({ exchange: '', routingKey: 'a' });

  it.each(['expired', 'maxlen', 'delivery_limit'] as const)('%s: the copy for a is dropped', (reason) => {
    const { deliver, dropped } = deadLetterViaDefault(published, 'a', reason, undefined);
    expect(deliver).toEqual([]);
    expect(dropped).toEqual(['a']);
  });

  it('rejected: the copy goes back to a', () => {
    const { deliver, dropped } = deadLetterViaDefault(published, 'a', 'rejected', undefined);
    expect(deliver).toEqual(['a']);
    expect(dropped).toEqual([]);
  });

  it('rejected twice then expired: dropped, the last cycle (a → a) has no rejection', () => {
    let msg: DeadLetterMessage = published;
    msg = deadLetterViaDefault(msg, 'a', 'rejected', undefined).copy;
    msg = deadLetterViaDefault(msg, 'a', 'rejected', undefined).copy;
    // x-death: [{a,expired}, {a,rejected,2}]: the walk stops at the first entry for a.
    expect(deadLetterViaDefault(msg, 'a', 'expired', undefined).dropped).toEqual(['a']);
  });
});

describe('cycles: a → b → a (a dead-letters to b, b to a, through DLKs)', () => {
  const published = message({ exchange: '', routingKey: 'a' });

  it('without a rejection: the copy back to a is dropped', () => {
    const toB = deadLetterViaDefault(published, 'a', 'expired', 'b');
    expect(toB.deliver).toEqual(['b']);
    const toA = deadLetterViaDefault(toB.copy, 'b', 'expired', 'a');
    expect(toA.deliver).toEqual([]);
    expect(toA.dropped).toEqual(['a']);
  });

  it('with a rejection in b: kept, and kept again on the next turn while the rejection is in the cycle', () => {
    const toB = deadLetterViaDefault(published, 'a', 'expired', 'b');
    const toA = deadLetterViaDefault(toB.copy, 'b', 'rejected', 'a');
    expect(toA.deliver).toEqual(['a']);
    // a expires it again: x-death [{a,expired,2}, {b,rejected}] → b: the cycle holds b's rejection.
    const toB2 = deadLetterViaDefault(toA.copy, 'a', 'expired', 'b');
    expect(toB2.deliver).toEqual(['b']);
    // b expires it: [{b,expired}, {a,expired,2}, {b,rejected}] → a: the cycle b..a has no rejection.
    const toA2 = deadLetterViaDefault(toB2.copy, 'b', 'expired', 'a');
    expect(toA2.dropped).toEqual(['a']);
  });

  it('a rejection anywhere in the cycle keeps it: a → b → c, rejected in c, back to b', () => {
    const toB = deadLetterViaDefault(published, 'a', 'expired', 'b');
    const toC = deadLetterViaDefault(toB.copy, 'b', 'expired', 'c');
    expect(toC.deliver).toEqual(['c']);
    // x-death [{c,rejected}, {b,expired}, {a,expired}] → b: the cycle c..b holds c's rejection.
    const backToB = deadLetterViaDefault(toC.copy, 'c', 'rejected', 'b');
    expect(backToB.deliver).toEqual(['b']);
    // The same turn without the rejection is dropped.
    expect(deadLetterViaDefault(toC.copy, 'c', 'expired', 'b').dropped).toEqual(['b']);
  });
});

describe('isCycle and splitCycles', () => {
  it('only the target that closes a cycle is dropped; others keep their copy, in order', () => {
    const props = withXDeath([death('a', 'expired')]);
    expect(splitCycles(props, ['x', 'a', 'y', 'a'])).toEqual({ deliver: ['x', 'y'], dropped: ['a', 'a'] });
  });

  it('without a drop, the target list is shared, not copied', () => {
    const targets = ['x', 'y'];
    expect(splitCycles(withXDeath([death('a', 'expired')]), targets).deliver).toBe(targets);
  });

  it('no x-death, or one that is not an array: never a cycle', () => {
    expect(isCycle({}, 'a')).toBe(false);
    expect(isCycle({ headers: { entries: [{ key: 'x-death', value: { longStr: 'a' } }] } }, 'a')).toBe(false);
  });

  it('an element that is not a table (a client wrote it) makes the cycle not automatic', () => {
    expect(isCycle(withXDeath([{ longStr: 'junk' }, death('a', 'expired')]), 'a')).toBe(false);
    // ...but only when it lies inside the cycle.
    expect(isCycle(withXDeath([death('a', 'expired'), { longStr: 'junk' }]), 'a')).toBe(true);
  });

  it('a rejection older than the cycle does not save it', () => {
    expect(
      isCycle(withXDeath([death('b', 'expired'), death('a', 'maxlen'), death('b', 'rejected')]), 'a'),
    ).toBe(true);
  });

  it('reads queue and reason as long or short strings', () => {
    const short: FieldValue = {
      table: {
        entries: [
          { key: 'queue', value: { shortStr: 'a' } },
          { key: 'reason', value: { shortStr: 'rejected' } },
        ],
      },
    };
    expect(isCycle(withXDeath([short]), 'a')).toBe(false);
    expect(isCycle(withXDeath([death('b', 'expired'), short]), 'a')).toBe(false);
  });
});
