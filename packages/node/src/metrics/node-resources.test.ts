import { describe, expect, it } from 'vitest';
import { BrokerCounters } from './broker-counters.ts';
import { formatBound } from './exposition-writer.ts';
import { parseMaxOpenFiles, readNodeResources } from './node-resources.ts';

describe('node resources', () => {
  it("reads the soft open-files limit from /proc/self/limits' format", () => {
    const limits = [
      'Limit                     Soft Limit           Hard Limit           Units',
      'Max processes             63438                63438                processes',
      'Max open files            1024                 524288               files',
    ].join('\n');
    expect(parseMaxOpenFiles(limits)).toBe(1024);
    expect(parseMaxOpenFiles(limits.replace('1024 ', 'unlimited'))).toBeUndefined();
    expect(parseMaxOpenFiles('nothing here')).toBeUndefined();
  });

  it('reads real figures: open descriptors under the limit, free disk space', async () => {
    const r = await readNodeResources(process.cwd());
    if (process.platform === 'linux') {
      expect(r.openFds).toBeGreaterThan(0);
      expect(r.maxFds).toBeGreaterThan(r.openFds as number);
    }
    expect(r.diskAvailableBytes).toBeGreaterThan(0);
    expect((await readNodeResources(undefined)).diskAvailableBytes).toBeUndefined();
    expect((await readNodeResources('/no/such/dir')).diskAvailableBytes).toBeUndefined();
  });
});

describe('message sizes', () => {
  it("count each body in the first bucket that holds it, with RabbitMQ's dashboard bounds as le", () => {
    const c = new BrokerCounters();
    for (const bytes of [0, 100, 101, 1000, 2e8]) c.countReceived(bytes, false);
    c.countReceived(50, true);
    const h = c.messageSizes();
    expect(Array.from(h.counts)).toEqual([3, 2, 0, 0, 0, 0, 0, 0, 1]);
    expect(h.count).toBe(6);
    expect(h.sum).toBe(0 + 100 + 101 + 1000 + 2e8 + 50);
    expect(c.receivedConfirm).toBe(1);
    expect(h.bounds.map(formatBound)).toEqual([
      '100.0',
      '1000.0',
      '10000.0',
      '100000.0',
      '1e+06',
      '1e+07',
      '5e+07',
      '1e+08',
    ]);
    expect([0.005, 0.00001, 2.5].map(formatBound)).toEqual(['0.005', '1e-05', '2.5']);
  });
});
