import { describe, expect, it } from 'vitest';
import { DEFAULT_FRAME_MAX } from '../wire/index.ts';
import { credentials } from './credentials.ts';
import { resolveTarget } from './target.ts';

describe('resolveTarget', () => {
  it('defaults like amqplib: localhost, guest/guest, vhost /', () => {
    expect(resolveTarget(undefined)).toEqual({
      url: 'ws://localhost:5680/',
      username: 'guest',
      password: 'guest',
      vhost: '/',
      heartbeat: 0,
      frameMax: DEFAULT_FRAME_MAX,
      channelMax: 0,
      locale: 'en_US',
    });
  });

  it('reads ws URLs with an encoded vhost', () => {
    expect(resolveTarget('ws://broker:7000/%2Fprod')).toMatchObject({
      url: 'ws://broker:7000/',
      vhost: '/prod',
      username: 'guest',
    });
    expect(resolveTarget('wss://broker/')).toMatchObject({ url: 'wss://broker:5680/', vhost: '/' });
  });

  it('reads styx URLs with credentials', () => {
    expect(resolveTarget('styx://al%40ice:p%3Ass@broker:5681/orders')).toMatchObject({
      url: 'ws://broker:5681/',
      username: 'al@ice',
      password: 'p:ss',
      vhost: 'orders',
    });
    expect(resolveTarget('styxs://u:p@broker/v').url).toBe('wss://broker:5680/');
  });

  it('maps pasted amqp URLs to WebSockets on 5680 unless a port is given', () => {
    expect(resolveTarget('amqp://u:p@rabbit/%2f?heartbeat=30&frameMax=65536&channelMax=10')).toMatchObject({
      url: 'ws://rabbit:5680/',
      vhost: '/',
      heartbeat: 30,
      frameMax: 65536,
      channelMax: 10,
    });
    expect(resolveTarget('amqp://rabbit:5672').url).toBe('ws://rabbit:5672/');
    expect(resolveTarget('amqps://rabbit').url).toBe('wss://rabbit:5680/');
    expect(resolveTarget('amqp://[::1]:7000/').url).toBe('ws://[::1]:7000/');
  });

  it('uses guest/guest only when the URL has neither user nor password', () => {
    expect(resolveTarget('amqp://user@h')).toMatchObject({ username: 'user', password: '' });
  });

  it('accepts amqplib’s object form', () => {
    expect(
      resolveTarget({ protocol: 'amqp', hostname: '::1', port: 9, vhost: 'v', heartbeat: 5 }),
    ).toMatchObject({
      url: 'ws://[::1]:9/',
      vhost: 'v',
      heartbeat: 5,
      username: 'guest',
    });
    expect(resolveTarget({ hostname: 'h', username: 'u' })).toMatchObject({ username: 'u', password: '' });
  });

  it('lets socket options override credentials, heartbeat and frameMax', () => {
    expect(
      resolveTarget('styx://a:b@h/', {
        credentials: credentials.plain('c', 'd'),
        heartbeat: 10,
        frameMax: 4096,
      }),
    ).toMatchObject({ username: 'c', password: 'd', heartbeat: 10, frameMax: 4096 });
    expect(resolveTarget('styx://a:b@h/', { username: 'e', password: 'f' })).toMatchObject({
      username: 'e',
      password: 'f',
    });
  });

  it('rejects other protocols and bad numbers', () => {
    expect(() => resolveTarget('http2://h')).toThrow(/protocol/);
    expect(() => resolveTarget('amqp://h?heartbeat=soon')).toThrow(TypeError);
  });
});
