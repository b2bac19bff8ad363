import type { FieldTable } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { DirectIndex } from './direct-index.ts';
import { route } from './route.ts';
import { Fixture, table } from './test-support.ts';

function routed(f: Fixture, exchange: string, keys: readonly string[], headers?: FieldTable): string[] {
  return [...route(f.m, '/', exchange, keys, headers)].sort();
}

describe('route: direct', () => {
  it('routes on equal keys, to every queue bound with the key', () => {
    const f = new Fixture()
      .queue('q1', 'q2', 'q3')
      .bind('amq.direct', 'q1', 'a')
      .bind('amq.direct', 'q2', 'a')
      .bind('amq.direct', 'q3', 'b');
    expect(routed(f, 'amq.direct', ['a'])).toEqual(['q1', 'q2']);
    expect(routed(f, 'amq.direct', ['b'])).toEqual(['q3']);
    expect(routed(f, 'amq.direct', ['c'])).toEqual([]);
    expect(routed(f, 'amq.direct', ['A'])).toEqual([]);
  });

  it('keeps routing while another binding of the same key and queue remains, and drops emptied keys', () => {
    const f = new Fixture()
      .queue('q')
      .bind('amq.direct', 'q', 'k')
      .bind('amq.direct', 'q', 'k', table({ v: { i32: 1 } }));
    f.unbind('amq.direct', 'q', 'k');
    expect(routed(f, 'amq.direct', ['k'])).toEqual(['q']);
    f.unbind('amq.direct', 'q', 'k', table({ v: { i32: 1 } }));
    expect(routed(f, 'amq.direct', ['k'])).toEqual([]);
    const index = f.m.vhostNode('/')?.exchanges.get('amq.direct')?.index as DirectIndex;
    expect(index.size).toBe(0);
    expect(index.keyCount).toBe(0);
  });
});

describe('route: fanout', () => {
  it('routes to every bound queue whatever the key', () => {
    const f = new Fixture().queue('q1', 'q2').bind('amq.fanout', 'q1', 'x').bind('amq.fanout', 'q2');
    expect(routed(f, 'amq.fanout', ['anything'])).toEqual(['q1', 'q2']);
    expect(routed(f, 'amq.fanout', [''])).toEqual(['q1', 'q2']);
    f.unbind('amq.fanout', 'q1', 'x');
    expect(routed(f, 'amq.fanout', ['k'])).toEqual(['q2']);
  });

  it('routes key-less types even with no routing keys, keyed types not', () => {
    const f = new Fixture().queue('q').bind('amq.fanout', 'q');
    expect(routed(f, 'amq.fanout', [])).toEqual(['q']);
    f.bind('amq.direct', 'q', 'k');
    expect(routed(f, 'amq.direct', [])).toEqual([]);
  });
});

describe('route: the default exchange', () => {
  it('routes to the queue named by the key, if it exists', () => {
    const f = new Fixture().queue('orders', 'amq.gen-x');
    expect(routed(f, '', ['orders'])).toEqual(['orders']);
    expect(routed(f, '', ['missing'])).toEqual([]);
    expect(routed(f, '', ['orders', 'missing', 'amq.gen-x'])).toEqual(['amq.gen-x', 'orders']);
    f.run({
      type: 'deleteQueue',
      vhost: '/',
      name: 'orders',
      ifUnused: false,
      ifEmpty: false,
      consumers: 0,
      messages: 0,
    });
    expect(routed(f, '', ['orders'])).toEqual([]);
  });
});

describe('route: several keys (CC / BCC)', () => {
  it('unions the keys and names each queue once', () => {
    const f = new Fixture()
      .queue('q1', 'q2', 'q3')
      .bind('amq.direct', 'q1', 'a')
      .bind('amq.direct', 'q2', 'b')
      .bind('amq.direct', 'q1', 'c')
      .bind('amq.topic', 'q1', 'x.*')
      .bind('amq.topic', 'q3', '#.y');
    const result = route(f.m, '/', 'amq.direct', ['a', 'b', 'c', 'a'], undefined);
    expect([...result].sort()).toEqual(['q1', 'q2']);
    expect(result.size).toBe(2);
    expect(routed(f, 'amq.topic', ['x.y', 'z.y', 'x.z'])).toEqual(['q1', 'q3']);
  });
});

describe('route: exchange-to-exchange', () => {
  it('follows chains, routing on all keys at every exchange', () => {
    const f = new Fixture()
      .exchange('a', 'direct')
      .exchange('b', 'topic')
      .exchange('c', 'fanout')
      .queue('qa', 'qb', 'qc')
      .bindExchange('a', 'b', 'k1')
      .bindExchange('b', 'c', 'k2.#')
      .bind('a', 'qa', 'k1')
      .bind('b', 'qb', 'k2.x')
      .bind('c', 'qc');
    expect(routed(f, 'a', ['k1'])).toEqual(['qa']);
    // b is reached through k1, then routes on k2.x too (RabbitMQ routes the whole delivery).
    expect(routed(f, 'a', ['k1', 'k2.x'])).toEqual(['qa', 'qb', 'qc']);
    expect(routed(f, 'b', ['k2'])).toEqual(['qc']);
    expect(routed(f, 'c', ['whatever'])).toEqual(['qc']);
  });

  it('visits each exchange once, so cycles end', () => {
    const f = new Fixture()
      .exchange('x', 'fanout')
      .exchange('y', 'fanout')
      .exchange('z', 'fanout')
      .queue('qx', 'qz')
      .bindExchange('x', 'y')
      .bindExchange('y', 'z')
      .bindExchange('z', 'x')
      .bindExchange('x', 'x')
      .bind('x', 'qx')
      .bind('z', 'qz');
    expect(routed(f, 'x', ['k'])).toEqual(['qx', 'qz']);
    expect(routed(f, 'y', ['k'])).toEqual(['qx', 'qz']);
  });

  it('routes through internal exchanges (only direct publishing to them is refused, by the node)', () => {
    const f = new Fixture().exchange('public', 'fanout').exchange('hidden', 'direct', true).queue('q');
    f.bindExchange('public', 'hidden').bind('hidden', 'q', 'k');
    expect(f.m.exchange('/', 'hidden')?.internal).toBe(true);
    expect(routed(f, 'public', ['k'])).toEqual(['q']);
  });

  it('stops routing through an exchange once it is deleted', () => {
    const f = new Fixture()
      .exchange('a', 'fanout')
      .exchange('b', 'fanout')
      .queue('q')
      .bindExchange('a', 'b')
      .bind('b', 'q');
    expect(routed(f, 'a', ['k'])).toEqual(['q']);
    f.run({ type: 'deleteExchange', vhost: '/', name: 'b', ifUnused: false });
    expect(routed(f, 'a', ['k'])).toEqual([]);
  });
});

describe('route: unknowns', () => {
  it('routes nowhere for an unknown vhost or exchange', () => {
    const f = new Fixture().queue('q').bind('amq.fanout', 'q');
    expect([...route(f.m, 'nope', 'amq.fanout', ['k'], undefined)]).toEqual([]);
    expect([...route(f.m, 'nope', '', ['q'], undefined)]).toEqual([]);
    expect(routed(f, 'missing', ['q'])).toEqual([]);
  });
});

describe('route: headers exchanges', () => {
  it('routes with x-match all and any on typed values', () => {
    const f = new Fixture()
      .queue('all', 'any', 'none')
      .bind(
        'amq.headers',
        'all',
        'ignored',
        table({ 'x-match': { longStr: 'all' }, format: { longStr: 'pdf' }, size: { i32: 5 } }),
      )
      .bind(
        'amq.headers',
        'any',
        '',
        table({ 'x-match': { longStr: 'any' }, format: { longStr: 'pdf' }, size: { i32: 5 } }),
      )
      .bind('amq.headers', 'none', '', table({ 'x-match': { longStr: 'any' } }));
    expect(routed(f, 'amq.headers', ['k'], table({ format: { longStr: 'pdf' }, size: { i64: 5 } }))).toEqual([
      'all',
      'any',
    ]);
    expect(routed(f, 'amq.headers', ['k'], table({ format: { shortStr: 'pdf' } }))).toEqual(['any']);
    expect(routed(f, 'amq.headers', ['k'], table({ size: { longStr: '5' } }))).toEqual([]);
    expect(routed(f, 'amq.headers', ['k'], undefined)).toEqual([]);
    // Headers exchanges ignore routing keys, even none.
    expect(routed(f, 'amq.headers', [], table({ size: { f64: 5 } }))).toEqual(['any']);
  });

  it('routes everything to an all-binding without pattern keys', () => {
    const f = new Fixture().queue('q').bind('amq.match', 'q');
    expect(routed(f, 'amq.match', ['k'], undefined)).toEqual(['q']);
    expect(routed(f, 'amq.match', ['k'], table({ a: { bool: true } }))).toEqual(['q']);
  });
});
