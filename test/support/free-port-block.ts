// A base port for `styx local-cluster --base-port B` in tests: node i takes B+i, B+10000+i,
// B+20000+i and B-9+i (AMQP), so all must be free, not just one port the OS picks.
import { createServer } from 'node:net';

/** Whether `port` on 127.0.0.1 can be listened on right now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A base B (below 45000) whose ports B+i, B+10000+i, B+20000+i and B-9+i, i = 1..nodes, are free. */
export async function freePortBlock(nodes = 3): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 25_000);
    const ports = [-9, 0, 10_000, 20_000].flatMap((offset) =>
      Array.from({ length: nodes }, (_, i) => base + offset + i + 1),
    );
    if ((await Promise.all(ports.map(isFree))).every(Boolean)) return base;
  }
  throw new Error('no block of free ports for a local cluster');
}
