// Free loopback ports for tests whose nodes must be told a port (flags and configs that cannot
// take 0), and a base port for `styx local-cluster --base-port B` in tests: node i takes B+i,
// B+10000+i, B+20000+i and B-9+i (AMQP), so all must be free, not just one port the OS picks.
//
// Both are drawn below the OS's ephemeral range (ip_local_port_range): a port the OS hands out for
// listen(0) comes from that range, and so does the local port of every outgoing connection, so
// between the test's probe and the node's bind another process's connection could take it (an
// EADDRINUSE seen in full runs). Below the range only another listener can.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The lowest port with nothing below it in the ephemeral range, nor a well-known service. */
const LOWEST_PORT = 10_000;

/** The first port of the OS's ephemeral range (Linux's default when it cannot be read). */
function ephemeralStart(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST_PORT + 25_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

const EPHEMERAL_START = ephemeralStart();

/** A loopback port below the ephemeral range that can be listened on right now. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (EPHEMERAL_START - LOWEST_PORT));
    if (await isFree(port)) return port;
  }
  throw new Error('no free loopback port below the ephemeral range');
}

/** Whether `port` on 127.0.0.1 can be listened on right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A base B whose ports B+i, B+10000+i, B+20000+i and B-9+i, i = 1..nodes, are free, all below the
 * ephemeral range.
 */
export async function freePortBlock(nodes = 3): Promise<number> {
  const lowest = LOWEST_PORT + 9;
  const highest = EPHEMERAL_START - 20_000 - nodes - 1;
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = lowest + Math.floor(Math.random() * (highest - lowest));
    const ports = [-9, 0, 10_000, 20_000].flatMap((offset) =>
      Array.from({ length: nodes }, (_, i) => base + offset + i + 1),
    );
    if ((await Promise.all(ports.map(isFree))).every(Boolean)) return base;
  }
  throw new Error('no block of free ports for a local cluster');
}
