import { describe, expect, it } from 'vitest';
import { filterJson, filterQuery, NO_FILTER } from './filter.ts';

describe('the message filter as the API takes it', () => {
  it('leaves out empty fields', () => {
    expect(filterQuery(NO_FILTER)).toEqual([]);
    expect(filterJson(NO_FILTER)).toEqual({});
  });

  it('turns ages in seconds into ms and header lines into criteria', () => {
    const draft = {
      reason: 'rejected',
      sourceQueue: 'orders',
      olderThan: '1.5',
      newerThan: '',
      headers: 'x-tenant:acme\n\n  x-empty  \nx-url:http://a:b',
    };
    expect(filterQuery(draft)).toEqual([
      ['reason', 'rejected'],
      ['source_queue', 'orders'],
      ['older_than_ms', '1500'],
      ['header', 'x-tenant:acme'],
      ['header', 'x-empty'],
      ['header', 'x-url:http://a:b'],
    ]);
    expect(filterJson(draft)).toEqual({
      reason: 'rejected',
      source_queue: 'orders',
      older_than_ms: 1500,
      headers: [
        { name: 'x-tenant', value: 'acme' },
        { name: 'x-empty', value: '' },
        { name: 'x-url', value: 'http://a:b' },
      ],
    });
  });

  it('drops an age that is not a non-negative number (the form shows what was sent)', () => {
    expect(filterJson({ ...NO_FILTER, olderThan: 'soon', newerThan: '-3' })).toEqual({});
  });
});
