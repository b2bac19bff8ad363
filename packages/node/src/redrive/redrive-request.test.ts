import { describe, expect, it } from 'vitest';
import { parseRedriveRequest, RedriveRequestError } from './redrive-request.ts';

describe('parseRedriveRequest', () => {
  it('reads a redrive to the source queues with a filter, a rate and a cap', () => {
    expect(
      parseRedriveRequest({
        target: 'source',
        filter: { reason: 'expired', headers: [{ name: 'tenant', value: 'a' }] },
        dry_run: true,
        rate: 2.5,
        max_messages: 10,
      }),
    ).toEqual({
      dryRun: true,
      spec: {
        target: { kind: 'source' },
        filter: { reason: 'expired', headers: [{ name: 'tenant', value: 'a' }] },
        rate: 2.5,
        maxMessages: 10,
      },
    });
  });

  it('reads a redrive to an exchange, the default exchange included, with defaults for the rest', () => {
    expect(parseRedriveRequest({ target: { exchange: '', routing_key: 'q' } })).toEqual({
      dryRun: false,
      spec: {
        target: { kind: 'exchange', exchange: '', routingKey: 'q' },
        filter: {},
        rate: null,
        maxMessages: null,
      },
    });
  });

  it.each([
    [null, /JSON object/],
    [{}, /'target' is required/],
    [{ target: 'sauce' }, /'target' must be/],
    [{ target: { exchange: 1, routing_key: 'k' } }, /target.exchange/],
    [{ target: { exchange: 'x', routing_key: 'k', vhost: '/' } }, /unknown target field 'vhost'/],
    [{ target: 'source', filter: [] }, /bad 'filter'/],
    [{ target: 'source', filter: { older_than_ms: -1 } }, /older_than_ms/],
    [{ target: 'source', dry_run: 'yes' }, /'dry_run'/],
    [{ target: 'source', rate: Number.NaN }, /'rate'/],
    [{ target: 'source', rate: 2_000_000 }, /'rate'/],
    [{ target: 'source', max_messages: 0 }, /'max_messages'/],
    [{ target: 'source', max_messages: 1.5 }, /'max_messages'/],
    [{ target: 'source', speed: 1 }, /unknown field 'speed'/],
  ])('refuses %j', (body, reason) => {
    expect(() => parseRedriveRequest(body)).toThrow(RedriveRequestError);
    expect(() => parseRedriveRequest(body)).toThrow(reason);
  });
});
