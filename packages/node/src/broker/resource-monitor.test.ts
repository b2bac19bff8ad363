// The disk check: how often (the closer to the limit, the sooner, as RabbitMQ), and a real statfs
// of a directory against limits it is surely above and below.
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import type { AlarmResource } from './resource-monitor.ts';
import {
  DISK_CHECK_MAX_MS,
  DISK_CHECK_MIN_MS,
  nextDiskCheckMs,
  ResourceMonitor,
} from './resource-monitor.ts';

describe('nextDiskCheckMs', () => {
  it('checks every 10 s with room, sooner near the limit, every 100 ms under it', () => {
    expect(nextDiskCheckMs(100e9, 50e6)).toBe(DISK_CHECK_MAX_MS);
    expect(nextDiskCheckMs(1_050e6, 50e6)).toBe(8_000);
    expect(nextDiskCheckMs(150e6, 50e6)).toBe(800);
    expect(nextDiskCheckMs(50e6, 50e6)).toBe(DISK_CHECK_MIN_MS);
    expect(nextDiskCheckMs(10e6, 50e6)).toBe(DISK_CHECK_MIN_MS);
  });
});

describe('ResourceMonitor', () => {
  async function alarmsWith(
    diskFreeLimitBytes: number,
  ): Promise<{ raised: AlarmResource[]; monitor: ResourceMonitor }> {
    const raised: AlarmResource[] = [];
    const monitor = new ResourceMonitor({
      logger: silentLogger(),
      memoryBudgetBytes: 0,
      dataDir: tmpdir(),
      diskFreeLimitBytes,
      onAlarm: (resource, on) => {
        if (on) raised.push(resource);
      },
    });
    await monitor.start();
    monitor.stop();
    return { raised, monitor };
  }

  it('raises the disk alarm at start when free space is below the limit, and not otherwise', async () => {
    const short = await alarmsWith(Number.MAX_SAFE_INTEGER);
    expect(short.raised).toEqual(['disk']);
    expect(short.monitor.diskAlarm).toBe(true);
    const fine = await alarmsWith(0);
    expect(fine.raised).toEqual([]);
    expect(fine.monitor.diskFreeBytes).toBeGreaterThan(0);
    expect(fine.monitor.diskFreeLimitBytes).toBe(0);
  });
});
