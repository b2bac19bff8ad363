import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createConnection } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { lagTolerantTimeout } from './lag-tolerant-timeout.ts';

/** A peer on loopback that answers every byte it reads 50 ms later; prints its port. */
const PEER_SCRIPT = `
const server = require('node:net').createServer((socket) =>
  socket.on('data', () => setTimeout(() => socket.write('a'), 50)));
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port)));
`;

/** Hold the event loop for `ms` (a busy process: thousands of groups catching up). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

function aborted(signal: AbortSignal): Promise<number> {
  const start = performance.now();
  return new Promise((resolve) => {
    if (signal.aborted) resolve(0);
    signal.addEventListener('abort', () => resolve(performance.now() - start), { once: true });
  });
}

describe('lagTolerantTimeout', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it('aborts after its time when the process runs on time, as a TimeoutError', async () => {
    const start = performance.now();
    const deadline = lagTolerantTimeout(40);
    await aborted(deadline.signal);
    expect(performance.now() - start).toBeGreaterThanOrEqual(35);
    expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('never aborts once cleared', async () => {
    const deadline = lagTolerantTimeout(20);
    deadline.clear();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(deadline.signal.aborted).toBe(false);
  });

  it('lets an answer already in the socket win after this process was busy past the deadline', async () => {
    // A peer (another process) answers 50 ms after each ping, in time for a 100 ms deadline, but
    // this process is busy for 300 ms meanwhile: the answer waits in the socket buffer. A plain
    // timer fires at the start of the next loop turn, before the poll phase that reads it.
    const peer = spawn(process.execPath, ['-e', PEER_SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanups.push(() => peer.kill('SIGKILL'));
    const [portLine] = (await once(peer.stdout, 'data')) as [Buffer];
    const client = createConnection(Number(portLine.toString()), '127.0.0.1');
    cleanups.push(() => client.destroy());
    await once(client, 'connect');

    const ping = async (deadline: AbortSignal): Promise<'answered' | 'timed out'> => {
      const outcome = new Promise<'answered' | 'timed out'>((resolve) => {
        client.once('data', () => resolve('answered'));
        deadline.addEventListener('abort', () => resolve('timed out'), { once: true });
      });
      client.write('p');
      // From the check phase, so the next loop turn starts with its timers, then reads the sockets.
      await new Promise((resolve) => setImmediate(resolve));
      busy(300);
      return outcome;
    };

    // The plain timeout loses the race (what this module exists for)...
    expect(await ping(AbortSignal.timeout(100))).toBe('timed out');
    await once(client, 'data'); // that answer
    // ...the lag-tolerant one does not.
    const deadline = lagTolerantTimeout(100);
    cleanups.push(() => deadline.clear());
    expect(await ping(deadline.signal)).toBe('answered');
    expect(deadline.signal.aborted).toBe(false);
  });

  it('still times out a silent peer while this process stays late, by maxMs at the latest', async () => {
    const start = performance.now();
    const deadline = lagTolerantTimeout(50, 400);
    // Every 60 ms the loop is held 80 ms: each timer of the deadline runs late.
    const load = setInterval(() => busy(80), 60);
    cleanups.push(() => clearInterval(load));
    await aborted(deadline.signal);
    const took = performance.now() - start;
    expect(took).toBeGreaterThanOrEqual(45);
    expect(took).toBeLessThan(400 + 250);
  });
});
