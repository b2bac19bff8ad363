/** Free TCP ports on loopback, for flags that cannot take port 0, and waiting for a listener on one. */
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Pause between two connection attempts while waiting for a listener, ms. */
const LISTENER_POLL_MS = 50;

/**
 * A port the OS just handed out on 127.0.0.1 and that is free again once this resolves. Another
 * process could take it before it is used; the window is short, and a node that finds it busy
 * exits with a clear message, which fails the launch rather than the measurement.
 */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : undefined;
      server.close(() => {
        if (port === undefined) reject(new Error('the OS gave no port'));
        else resolvePort(port);
      });
    });
  });
}

/** `count` free loopback ports, all different (the OS may hand a just-freed port out again). */
export async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freeLoopbackPort());
  return [...ports];
}

/** Whether a TCP connection to 127.0.0.1:`port` is accepted (then closed at once). */
function accepts(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

/**
 * Resolves once 127.0.0.1:`port` accepts a TCP connection; rejects after `timeoutMs`, or as soon as
 * `alive()` says the process that should listen is gone.
 */
export async function waitForLoopbackListener(
  port: number,
  timeoutMs: number,
  alive: () => boolean,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await accepts(port)) return;
    if (!alive()) throw new Error(`exited before listening on port ${port}`);
    if (performance.now() >= deadline)
      throw new Error(`nothing listened on 127.0.0.1:${port} within ${Math.round(timeoutMs)} ms`);
    await sleep(LISTENER_POLL_MS);
  }
}
