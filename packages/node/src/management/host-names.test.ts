import { describe, expect, it } from 'vitest';
import { HostAllowList, hostName } from './host-names.ts';

const MACHINE = { hostname: 'Broker-7', addresses: ['127.0.0.1', '192.0.2.2', '::1', 'fe80::1%eth0'] };

describe('HostAllowList', () => {
  it('takes the loopback names when bound to loopback, and nothing of the machine', () => {
    const list = new HostAllowList('127.0.0.1', [], MACHINE);
    for (const host of ['127.0.0.1:15680', 'localhost', 'LocalHost.:1', '[::1]:15680']) {
      expect([host, list.allows(host)]).toEqual([host, true]);
    }
    for (const host of ['broker-7', '192.0.2.2:15680', 'evil.example', '', ':15680', 'localhost:x', '[::1']) {
      expect([host, list.allows(host)]).toEqual([host, false]);
    }
  });

  it('takes the machine host name and interface addresses when bound to every address', () => {
    for (const bound of ['0.0.0.0', '::']) {
      const list = new HostAllowList(bound, [], MACHINE);
      for (const host of ['broker-7:15680', '192.0.2.2', '[fe80::1]:15680', 'localhost', '127.0.0.1']) {
        expect([bound, host, list.allows(host)]).toEqual([bound, host, true]);
      }
      expect(list.allows('broker-7.evil.example')).toBe(false);
    }
  });

  it('takes only the bound address and the names given when bound to one interface', () => {
    const list = new HostAllowList('192.0.2.2', ['styx.example.com'], MACHINE);
    expect(
      ['192.0.2.2:15680', 'styx.example.com', 'STYX.example.com.:443'].map((h) => list.allows(h)),
    ).toEqual([true, true, true]);
    expect(['localhost', '127.0.0.1', 'broker-7'].map((h) => list.allows(h))).toEqual([false, false, false]);
  });

  it('lets a request without a Host header through (HTTP/1.0, not a browser)', () => {
    expect(new HostAllowList('127.0.0.1', [], MACHINE).allows(undefined)).toBe(true);
  });
});

describe('hostName', () => {
  it('takes the name out of a Host header', () => {
    expect(hostName('[::1]:15680')).toBe('::1');
    expect(hostName('Styx.Example.:80')).toBe('styx.example');
    expect(hostName('a:b:c')).toBeUndefined();
    expect(hostName('[::1]x')).toBeUndefined();
  });
});
