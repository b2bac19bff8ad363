import type { BasicProperties, FieldValue } from '@styx/client/wire';
import type { DeadLetterReason } from '@styx/dlx';
import { nextXDeath } from '@styx/dlx';
import { describe, expect, it } from 'vitest';
import {
  filterJson,
  firstDeath,
  headerText,
  latestDeath,
  MAX_HEADER_CRITERIA,
  MessageFilterError,
  matchesFilter,
  parseFilterJson,
  parseFilterQuery,
} from './message-filter.ts';

const NOW = 1_700_000_100_000;

/** Properties of a message dead-lettered from each {queue, reason} in turn (oldest first). */
function died(
  deaths: readonly [string, DeadLetterReason][],
  extra: Record<string, FieldValue> = {},
): BasicProperties {
  let xDeath: FieldValue | undefined;
  for (const [queue, reason] of deaths) {
    xDeath = nextXDeath(xDeath, {
      queue,
      reason,
      timeSeconds: 1_700_000_000,
      exchange: '',
      routingKeys: [queue],
      originalExpiration: undefined,
    });
  }
  const entries = Object.entries(extra).map(([key, value]) => ({ key, value }));
  if (xDeath !== undefined) entries.unshift({ key: 'x-death', value: xDeath });
  const first = deaths[0];
  if (first !== undefined) {
    entries.push({ key: 'x-first-death-reason', value: { longStr: first[1] } });
    entries.push({ key: 'x-first-death-queue', value: { longStr: first[0] } });
    entries.push({ key: 'x-first-death-exchange', value: { longStr: '' } });
  }
  return { headers: { entries } };
}

const subject = (properties: BasicProperties, ageMs = 0) => ({ enqueuedAt: NOW - ageMs, properties });

describe('latestDeath', () => {
  it('is the first x-death entry: the {queue, reason} updated last', () => {
    const props = died([
      ['orders', 'rejected'],
      ['retry', 'expired'],
    ]);
    expect(latestDeath(props)).toEqual({ reason: 'expired', queue: 'retry', exchange: '' });
    expect(firstDeath(props)).toEqual({ reason: 'rejected', queue: 'orders', exchange: '' });
  });

  it('falls back to x-last-death-* then x-first-death-* when x-death is gone', () => {
    const last: BasicProperties = {
      headers: {
        entries: [
          { key: 'x-death', value: { longStr: 'converted by a client' } },
          { key: 'x-last-death-reason', value: { longStr: 'maxlen' } },
          { key: 'x-last-death-queue', value: { longStr: 'q2' } },
          { key: 'x-first-death-reason', value: { longStr: 'expired' } },
          { key: 'x-first-death-queue', value: { longStr: 'q1' } },
        ],
      },
    };
    expect(latestDeath(last)).toEqual({ reason: 'maxlen', queue: 'q2', exchange: undefined });
    const firstOnly: BasicProperties = {
      headers: { entries: [{ key: 'x-first-death-reason', value: { longStr: 'expired' } }] },
    };
    expect(latestDeath(firstOnly)).toEqual({ reason: 'expired', queue: undefined, exchange: undefined });
    expect(latestDeath({})).toBeUndefined();
  });
});

describe('matchesFilter', () => {
  it('selects everything with an empty filter, a never dead-lettered message included', () => {
    expect(matchesFilter({}, subject({}), NOW)).toBe(true);
  });

  it('by reason and source queue of the latest death', () => {
    const props = died([
      ['orders', 'rejected'],
      ['retry', 'expired'],
    ]);
    expect(matchesFilter({ reason: 'expired' }, subject(props), NOW)).toBe(true);
    expect(matchesFilter({ reason: 'rejected' }, subject(props), NOW)).toBe(false);
    expect(matchesFilter({ sourceQueue: 'retry' }, subject(props), NOW)).toBe(true);
    expect(matchesFilter({ sourceQueue: 'orders' }, subject(props), NOW)).toBe(false);
    expect(matchesFilter({ reason: 'expired', sourceQueue: 'orders' }, subject(props), NOW)).toBe(false);
    expect(matchesFilter({ reason: 'expired' }, subject({}), NOW)).toBe(false);
  });

  it('by age in the queue: older means >= the bound, newer means below it', () => {
    expect(matchesFilter({ olderThanMs: 1000 }, subject({}, 1000), NOW)).toBe(true);
    expect(matchesFilter({ olderThanMs: 1000 }, subject({}, 999), NOW)).toBe(false);
    expect(matchesFilter({ newerThanMs: 1000 }, subject({}, 999), NOW)).toBe(true);
    expect(matchesFilter({ newerThanMs: 1000 }, subject({}, 1000), NOW)).toBe(false);
    expect(matchesFilter({ olderThanMs: 10, newerThanMs: 20 }, subject({}, 15), NOW)).toBe(true);
  });

  it('by headers compared as text, every criterion must hold', () => {
    const props = died([], {
      tenant: { longStr: 'acme' },
      attempt: { i32: 3 },
      urgent: { bool: true },
      nested: { table: { entries: [] } },
    });
    const h = (name: string, value: string) => ({ name, value });
    expect(matchesFilter({ headers: [h('tenant', 'acme')] }, subject(props), NOW)).toBe(true);
    expect(matchesFilter({ headers: [h('attempt', '3'), h('urgent', 'true')] }, subject(props), NOW)).toBe(
      true,
    );
    expect(matchesFilter({ headers: [h('tenant', 'acme'), h('attempt', '4')] }, subject(props), NOW)).toBe(
      false,
    );
    expect(matchesFilter({ headers: [h('missing', '')] }, subject(props), NOW)).toBe(false);
    expect(matchesFilter({ headers: [h('nested', '')] }, subject(props), NOW)).toBe(false);
  });

  it('headerText reads strings, numbers, booleans and timestamps only', () => {
    expect(headerText({ shortStr: 'x' })).toBe('x');
    expect(headerText({ i64: 12 })).toBe('12');
    expect(headerText({ f64: 1.5 })).toBe('1.5');
    expect(headerText({ timestamp: 7 })).toBe('7');
    expect(headerText({ bool: false })).toBe('false');
    expect(headerText({ array: { values: [] } })).toBeUndefined();
    expect(headerText(undefined)).toBeUndefined();
  });
});

describe('parseFilterQuery', () => {
  it('reads every criterion', () => {
    const q = new URLSearchParams(
      'reason=expired&source_queue=orders&older_than_ms=10&newer_than_ms=20&header=tenant:acme&header=k:a:b',
    );
    expect(parseFilterQuery(q)).toEqual({
      reason: 'expired',
      sourceQueue: 'orders',
      olderThanMs: 10,
      newerThanMs: 20,
      headers: [
        { name: 'tenant', value: 'acme' },
        { name: 'k', value: 'a:b' },
      ],
    });
    expect(parseFilterQuery(new URLSearchParams('limit=3'))).toEqual({});
  });

  it.each([
    ['reason=timeout', /'reason' must be one of rejected, expired, maxlen, delivery_limit/],
    ['older_than_ms=-1', /'older_than_ms' must be a whole number/],
    ['newer_than_ms=1.5', /'newer_than_ms' must be a whole number/],
    ['newer_than_ms=', /'newer_than_ms' must be a whole number/],
    ['header=novalue', /'header' must be 'name:value'/],
    ['header=:v', /'header' must be 'name:value'/],
    ['reason=expired&reason=maxlen', /'reason' may be given once/],
    [`source_queue=${'q'.repeat(1025)}`, /longer than 1024/],
  ])('refuses %s', (query, message) => {
    expect(() => parseFilterQuery(new URLSearchParams(query))).toThrow(MessageFilterError);
    expect(() => parseFilterQuery(new URLSearchParams(query))).toThrow(message);
  });

  it('refuses too many header criteria', () => {
    const q = new URLSearchParams();
    for (let i = 0; i <= MAX_HEADER_CRITERIA; i++) q.append('header', `h${i}:v`);
    expect(() => parseFilterQuery(q)).toThrow(/at most 16 header criteria/);
  });
});

describe('parseFilterJson', () => {
  it('reads what filterJson writes', () => {
    const filter = {
      reason: 'maxlen' as const,
      sourceQueue: 'q',
      olderThanMs: 0,
      newerThanMs: 5,
      headers: [{ name: 'a', value: 'b' }],
    };
    expect(parseFilterJson(filterJson(filter))).toEqual(filter);
    expect(parseFilterJson(undefined)).toEqual({});
    expect(parseFilterJson(null)).toEqual({});
  });

  it.each([
    [[], /must be a JSON object/],
    [{ reasons: ['expired'] }, /unknown filter field 'reasons'/],
    [{ headers: 'a:b' }, /'headers' must be an array/],
    [{ headers: [{ name: 'a' }] }, /'headers\[\]\.value' must be a string/],
    [{ headers: [{ name: '', value: 'x' }] }, /must not be empty/],
    [{ headers: [{ name: 'a', value: 'b', op: 'eq' }] }, /unknown header criterion field 'op'/],
    [{ older_than_ms: '10' }, undefined],
    [{ older_than_ms: true }, /'older_than_ms' must be a whole number/],
    [{ reason: 1 }, /'reason' must be one of/],
  ])('checks %j', (value, message) => {
    if (message === undefined) expect(parseFilterJson(value)).toEqual({ olderThanMs: 10 });
    else expect(() => parseFilterJson(value)).toThrow(message);
  });
});
