/**
 * CPU time and memory of another process, read from Linux's /proc (the brokers run as child
 * processes of the bench), and of the bench itself (the load generator).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Kernel clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100; // Linux's USER_HZ on every common architecture
    }
  }
  return ticksPerSecond;
}

/**
 * User + system CPU time of process `pid` so far, in ms; undefined when it cannot be read (the
 * process is gone, or this is not Linux).
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return parseStatCpuMs(stat, clockTicks());
}

/**
 * utime + stime (fields 14 and 15) of a /proc/<pid>/stat line, in ms. The command name (field 2)
 * is in parentheses and may hold spaces, so fields are counted after its closing parenthesis.
 */
export function parseStatCpuMs(stat: string, ticks: number): number | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  // After ')': field 3 (state) is at index 0, so field n is at index n - 3.
  const fields = stat.slice(close + 2).split(' ');
  const utime = Number(fields[14 - 3]);
  const stime = Number(fields[15 - 3]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
  return ((utime + stime) * 1000) / ticks;
}

/** Resident memory of a process, bytes: anonymous (heap), file-backed (mapped files) and total. */
export interface ResidentMemory {
  readonly rss: number;
  readonly anon: number;
  readonly file: number;
}

/** VmRSS, RssAnon and RssFile of `pid` from /proc/<pid>/status; undefined when unreadable. */
export function processMemory(pid: number): ResidentMemory | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  return parseStatusMemory(status);
}

/** The memory lines of a /proc/<pid>/status text (values there are in kB). */
export function parseStatusMemory(status: string): ResidentMemory | undefined {
  const kb = (key: string): number | undefined => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
    return m?.[1] === undefined ? undefined : Number(m[1]) * 1024;
  };
  const rss = kb('VmRSS');
  if (rss === undefined) return undefined;
  return { rss, anon: kb('RssAnon') ?? rss, file: kb('RssFile') ?? 0 };
}

/** CPU time this process (the load generator) has used so far, ms. */
export function generatorCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
