/**
 * CPU time and memory of another process, read from Linux's /proc (the brokers run as child
 * processes of the bench), and of the bench itself (the load generator).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

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

/** The fields of one /proc/<pid>/stat line the bench reads. */
export interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  /** utime + stime: CPU time of the process itself (all its threads), clock ticks. */
  readonly ownTicks: number;
  /**
   * cutime + cstime: CPU time of its children that exited and were waited for, clock ticks. A
   * helper that exits during a window moves its time here, so a tree's sum never drops it.
   */
  readonly reapedChildTicks: number;
}

/**
 * Reads pid (1), ppid (4), utime/stime (14, 15) and cutime/cstime (16, 17) of a /proc/<pid>/stat
 * line. The command name (field 2) is in parentheses and may hold spaces and parentheses, so fields
 * are counted after its last closing parenthesis.
 */
export function parseStat(stat: string): ProcStat | undefined {
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const pid = Number(stat.slice(0, stat.indexOf(' ')));
  // After ')': field 3 (state) is at index 0, so field n is at index n - 3.
  const fields = stat.slice(close + 2).split(' ');
  const field = (n: number): number => Number(fields[n - 3] ?? Number.NaN);
  const values = [pid, field(4), field(14), field(15), field(16), field(17)];
  if (!values.every((v) => Number.isInteger(v) && v >= 0)) return undefined;
  const [, ppid = 0, utime = 0, stime = 0, cutime = 0, cstime = 0] = values;
  return { pid, ppid, ownTicks: utime + stime, reapedChildTicks: cutime + cstime };
}

/** utime + stime (fields 14 and 15) of a /proc/<pid>/stat line, in ms. */
export function parseStatCpuMs(stat: string, ticks: number): number | undefined {
  const s = parseStat(stat);
  return s === undefined ? undefined : (s.ownTicks * 1000) / ticks;
}

/**
 * CPU time of the processes `roots` and every descendant of theirs (RabbitMQ's beam.smp runs
 * erl_child_setup and inet_gethost beside it), in ms: user + system time of each, plus that of their
 * children already exited. Undefined when a root is not among `stats` (it exited: the sum would
 * silently drop its time).
 */
export function treeCpuMs(
  stats: readonly ProcStat[],
  roots: readonly number[],
  ticks: number,
): number | undefined {
  const byParent = new Map<number, ProcStat[]>();
  for (const s of stats) {
    const siblings = byParent.get(s.ppid);
    if (siblings === undefined) byParent.set(s.ppid, [s]);
    else siblings.push(s);
  }
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const seen = new Set<number>();
  const pending: ProcStat[] = [];
  for (const r of roots) {
    const s = byPid.get(r);
    if (s === undefined) return undefined;
    pending.push(s);
  }
  let ticksSum = 0;
  for (let s = pending.pop(); s !== undefined; s = pending.pop()) {
    // Two roots may be parent and child (never here, but a pid must count once).
    if (seen.has(s.pid)) continue;
    seen.add(s.pid);
    ticksSum += s.ownTicks + s.reapedChildTicks;
    pending.push(...(byParent.get(s.pid) ?? []));
  }
  return (ticksSum * 1000) / ticks;
}

/** Every process's stat line in /proc (those that exit while it is read are left out). */
function allProcStats(): ProcStat[] {
  const stats: ProcStat[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return stats;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      if (s !== undefined) stats.push(s);
    } catch {
      // exited between readdir and read
    }
  }
  return stats;
}

/**
 * CPU time so far of the broker processes `roots` and their descendants, ms; undefined when one of
 * the roots cannot be read (gone, or not Linux).
 */
export function processTreeCpuMs(roots: readonly number[]): number | undefined {
  return treeCpuMs(allProcStats(), roots, clockTicks());
}

/**
 * CPU time so far of each root's process tree (one figure per cluster node, in the order of
 * `roots`), ms, from one reading of /proc; undefined when a root cannot be read.
 */
export function perRootCpuMs(roots: readonly number[]): number[] | undefined {
  const stats = allProcStats();
  const ticks = clockTicks();
  const each: number[] = [];
  for (const root of roots) {
    const ms = treeCpuMs(stats, [root], ticks);
    if (ms === undefined) return undefined;
    each.push(ms);
  }
  return each;
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

/** The value of a `Key:   123 kB` line of a /proc text, in bytes. */
function kbLine(text: string, key: string): number | undefined {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
  return m?.[1] === undefined ? undefined : Number(m[1]) * 1024;
}

/** The memory lines of a /proc/<pid>/status text (values there are in kB). */
export function parseStatusMemory(status: string): ResidentMemory | undefined {
  const kb = (key: string): number | undefined => kbLine(status, key);
  const rss = kb('VmRSS');
  if (rss === undefined) return undefined;
  return { rss, anon: kb('RssAnon') ?? rss, file: kb('RssFile') ?? 0 };
}

/** CPU time this process (the load generator) has used so far, ms. */
export function generatorCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Rss and Anonymous of a /proc/<pid>/smaps_rollup text (kB there), in bytes; file-backed is the
 * rest (mapped files such as LMDB's map, and shared memory). Undefined without an Rss line.
 */
export function parseSmapsRollup(text: string): ResidentMemory | undefined {
  const kb = (key: string): number | undefined => kbLine(text, key);
  const rss = kb('Rss');
  if (rss === undefined) return undefined;
  const anon = kb('Anonymous') ?? rss;
  return { rss, anon, file: Math.max(0, rss - anon) };
}

/**
 * Resident memory of `pid` from /proc/<pid>/smaps_rollup (which splits anonymous from file-backed
 * pages exactly), falling back to /proc/<pid>/status on kernels without it.
 */
export function processMemoryRollup(pid: number): ResidentMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return processMemory(pid);
  }
  return parseSmapsRollup(text) ?? processMemory(pid);
}
