import type { BasicProperties } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { showsDeliveryCount, withDeliveryCount } from './delivery-count-header.ts';

describe('withDeliveryCount', () => {
  it('adds x-delivery-count as a signed 64-bit integer, the table sorted by key, the input untouched', () => {
    const properties: BasicProperties = {
      contentType: 'text/plain',
      messageId: 'm',
      headers: {
        entries: [
          { key: 'x-num', value: { i8: 42 } },
          { key: 'x-app', value: { longStr: 'demo' } },
        ],
      },
    };
    const out = withDeliveryCount(properties, 0);
    expect(out).toEqual({
      contentType: 'text/plain',
      messageId: 'm',
      headers: {
        entries: [
          { key: 'x-app', value: { longStr: 'demo' } },
          { key: 'x-delivery-count', value: { i64: 0 } },
          { key: 'x-num', value: { i8: 42 } },
        ],
      },
    });
    expect(properties.headers?.entries.map((e) => e.key)).toEqual(['x-num', 'x-app']);
  });

  it('replaces a client-set x-delivery-count, and handles counts past the shared ones', () => {
    const properties: BasicProperties = {
      headers: { entries: [{ key: 'x-delivery-count', value: { longStr: 'forged' } }] },
    };
    expect(withDeliveryCount(properties, 3).headers).toEqual({
      entries: [{ key: 'x-delivery-count', value: { i64: 3 } }],
    });
    expect(withDeliveryCount({}, 1000).headers).toEqual({
      entries: [{ key: 'x-delivery-count', value: { i64: 1000 } }],
    });
  });
});

describe('showsDeliveryCount', () => {
  it('is true for queues declared x-queue-type quorum only (RabbitMQ’s default type is classic)', () => {
    const typed = (value: string) => ({ entries: [{ key: 'x-queue-type', value: { longStr: value } }] });
    expect(showsDeliveryCount(typed('quorum'))).toBe(true);
    expect(showsDeliveryCount(typed('classic'))).toBe(false);
    expect(showsDeliveryCount({ entries: [] })).toBe(false);
    expect(showsDeliveryCount(undefined)).toBe(false);
  });
});
