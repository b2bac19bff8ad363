import type { BasicProperties } from '@styx/client/wire';
import { encodeProperties } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { DeadLetterInput, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import { SharedCopyProperties } from './shared-copy-properties.ts';
import { keysValue, message } from './test-support.ts';

const T0 = 1_795_308_382;

function input(msg: DeadLetterMessage, over: Partial<DeadLetterInput> = {}): DeadLetterInput {
  return {
    message: msg,
    queue: 'q1',
    reason: 'expired',
    dlx: 'dlx',
    dlk: undefined,
    timeSeconds: T0,
    ...over,
  };
}

const persistent = (body: string, properties: BasicProperties = { deliveryMode: 2 }): DeadLetterMessage =>
  message({ properties, body });

describe('SharedCopyProperties', () => {
  it('gives copies of a burst one properties object, equal to what deadLetterCopy builds', () => {
    const shared = new SharedCopyProperties();
    const a = shared.copy(input(persistent('a')));
    const b = shared.copy(input(persistent('b')));
    expect(b.properties).toBe(a.properties);
    // Everything else is the copy's own.
    expect(b).toEqual({ ...deadLetterCopy(input(persistent('b'))), properties: b.properties });
    expect(b.properties).toEqual(deadLetterCopy(input(persistent('b'))).properties);
    expect(encodeProperties(b.properties)).toEqual(
      encodeProperties(deadLetterCopy(input(persistent('b'))).properties),
    );
  });

  it('a shared copy is addressed as deadLetterCopy addresses it: DLK, BCC, exchange', () => {
    const withBcc = message({ properties: { deliveryMode: 2 }, bcc: ['b1', 'b2'] });
    const cases: DeadLetterInput[] = [
      input(withBcc),
      input(withBcc, { dlk: 'dead' }),
      input(withBcc, { dlx: '' }),
      input(message({ properties: { deliveryMode: 2 }, bcc: [] })),
    ];
    for (const c of cases) {
      const shared = new SharedCopyProperties();
      shared.copy(c);
      const hit = shared.copy(c);
      expect(hit).toEqual(deadLetterCopy(c));
    }
  });

  it('bad input is refused even right after a good one of the same shape', () => {
    const shared = new SharedCopyProperties();
    shared.copy(input(persistent('a')));
    expect(() => shared.copy(input(persistent('a'), { timeSeconds: -1 }))).toThrow(/timeSeconds/);
    expect(() => shared.copy(input(persistent('a'), { reason: 'nope' as never }))).toThrow(/reason/);
    expect(() => shared.copy(input(persistent('a'), { timeSeconds: -1 }))).toThrow(/timeSeconds/);
  });

  it('never shares across any input the properties depend on', () => {
    const base = input(persistent('x'));
    const variants: DeadLetterInput[] = [
      input(persistent('x'), { queue: 'q2' }),
      input(persistent('x'), { reason: 'rejected' }),
      input(persistent('x'), { timeSeconds: T0 + 1 }),
      input(message({ exchange: 'other', properties: { deliveryMode: 2 } })),
      input(message({ routingKey: 'rk2', properties: { deliveryMode: 2 } })),
      input(persistent('x', { deliveryMode: 1 })),
      input(persistent('x', { deliveryMode: 2, expiration: '100' })),
      input(persistent('x', { deliveryMode: 2, messageId: 'm1' })),
      // A string that would read the same without length prefixes.
      input(persistent('x', { deliveryMode: 2, appId: '1:a' })),
      input(persistent('x', { deliveryMode: 2, appId: '1' }), { queue: 'q1:a' }),
    ];
    for (const variant of variants) {
      const shared = new SharedCopyProperties();
      const first = shared.copy(base);
      const second = shared.copy(variant);
      expect(second.properties).not.toBe(first.properties);
      expect(second.properties).toEqual(deadLetterCopy(variant).properties);
    }
  });

  it('never shares the properties of a message with headers (CC, an earlier x-death, anything)', () => {
    const shared = new SharedCopyProperties();
    const withCc = message({ headers: { CC: keysValue('c1') }, properties: { deliveryMode: 2 } });
    const first = shared.copy(input(withCc));
    const second = shared.copy(input(withCc));
    expect(second.properties).not.toBe(first.properties);
    expect(second.routingKeys).toEqual(['rk', 'c1']);
    const again = shared.copy(input(second));
    expect(again.properties).toEqual(deadLetterCopy(input(second)).properties);
  });

  it('keeps only the last key: a new one replaces it, and the old one is built again', () => {
    const shared = new SharedCopyProperties();
    const a1 = shared.copy(input(persistent('a')));
    const b1 = shared.copy(input(persistent('b'), { timeSeconds: T0 + 1 }));
    const b2 = shared.copy(input(persistent('c'), { timeSeconds: T0 + 1 }));
    const a2 = shared.copy(input(persistent('d')));
    expect(b2.properties).toBe(b1.properties);
    expect(a2.properties).not.toBe(a1.properties);
    expect(a2.properties).toEqual(a1.properties);
  });
});
