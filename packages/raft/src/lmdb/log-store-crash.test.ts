import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CounterMachine, counterCodec } from '../compliance/counter-machine.ts';
import { SingleVoterLog } from '../single-voter-log.ts';
import { openLogStore } from './log-store.ts';

const WRITER = fileURLToPath(new URL('./test-support/crash-writer.ts', import.meta.url));
/** Confirmations to wait for before the kill (entries): enough to span many group commits. */
const CONFIRMATIONS_BEFORE_KILL = 400;

/**
 * Run the writer until it has confirmed `count` more commands, then SIGKILL it mid-stream.
 * Returns the highest value it confirmed and the number of entries it found on start.
 */
async function runAndKill(dir: string, count: number): Promise<{ replayed: number; maxConfirmed: number }> {
  const child = spawn(process.execPath, [WRITER, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal ?? code)),
  );
  let replayed = -1;
  let maxConfirmed = 0;
  let confirmed = 0;
  for await (const line of createInterface({ input: child.stdout })) {
    if (line.startsWith('ready ')) {
      replayed = Number(line.slice(6));
      continue;
    }
    const value = Number(line);
    // Confirmations leave in log order: each one is the next value.
    if (value !== maxConfirmed + 1 && maxConfirmed !== 0)
      throw new Error(`confirmed ${value} after ${maxConfirmed}`);
    maxConfirmed = value;
    if (++confirmed === count) {
      child.kill('SIGKILL');
      break;
    }
  }
  const exit = await exited;
  if (exit !== 'SIGKILL') throw new Error(`writer exited with ${String(exit)} before the kill: ${stderr}`);
  return { replayed, maxConfirmed };
}

async function replay(dir: string): Promise<CounterMachine> {
  const store = openLogStore(dir);
  const log = new SingleVoterLog('g', store, counterCodec);
  const machine = new CounterMachine();
  await log.open(machine);
  await log.close();
  await store.close();
  return machine;
}

describe('log store under SIGKILL', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'styx-raft-crash-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every confirmed entry, in order, without gaps or duplicates, across two kills', async () => {
    const first = await runAndKill(dir, CONFIRMATIONS_BEFORE_KILL);
    expect(first.replayed).toBe(0);
    const afterFirst = await replay(dir);
    const survived = afterFirst.state.values.length;
    expect(survived).toBeGreaterThanOrEqual(first.maxConfirmed);
    expect(afterFirst.state.values).toEqual(Array.from({ length: survived }, (_, i) => i + 1));

    // The restarted writer continues after what survived, and is killed again.
    const second = await runAndKill(dir, CONFIRMATIONS_BEFORE_KILL);
    expect(second.replayed).toBe(survived);
    const afterSecond = await replay(dir);
    const total = afterSecond.state.values.length;
    expect(total).toBeGreaterThanOrEqual(second.maxConfirmed);
    expect(afterSecond.state.values).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect(afterSecond.appliedIndexes).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });
});
