import type { BasicProperties, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { destinationOf, NO_SOURCE_QUEUE } from './redrive-target.ts';

function death(queue: string, reason: string): FieldValue {
  return {
    table: {
      entries: [
        { key: 'count', value: { i64: 1 } },
        { key: 'reason', value: { longStr: reason } },
        { key: 'queue', value: { longStr: queue } },
      ],
    },
  } as FieldValue;
}

function withXDeath(...deaths: FieldValue[]): BasicProperties {
  return { headers: { entries: [{ key: 'x-death', value: { array: { values: deaths } } as FieldValue }] } };
}

describe('destinationOf', () => {
  it('sends a message back to the queue of its latest death, through the default exchange', () => {
    // Newest first: it died last in q2 (after q1).
    const properties = withXDeath(death('q2', 'expired'), death('q1', 'rejected'));
    expect(destinationOf({ kind: 'source' }, properties)).toEqual({ exchange: '', routingKey: 'q2' });
  });

  it('falls back to x-first-death-queue when x-death is gone', () => {
    const properties: BasicProperties = {
      headers: { entries: [{ key: 'x-first-death-queue', value: { longStr: 'orders' } }] },
    };
    expect(destinationOf({ kind: 'source' }, properties)).toEqual({ exchange: '', routingKey: 'orders' });
  });

  it('has no source for a message never dead-lettered', () => {
    expect(destinationOf({ kind: 'source' }, {})).toBe(NO_SOURCE_QUEUE);
  });

  it('sends every message to a named exchange and key, whatever its history', () => {
    const target = { kind: 'exchange', exchange: 'retry', routingKey: 'r' } as const;
    expect(destinationOf(target, withXDeath(death('q1', 'rejected')))).toEqual({
      exchange: 'retry',
      routingKey: 'r',
    });
    expect(destinationOf(target, {})).toEqual({ exchange: 'retry', routingKey: 'r' });
  });
});
