import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { distinctFreePorts, freeLoopbackPort, waitForLoopbackListener } from './free-port.ts';

describe('distinctFreePorts', () => {
  it('hands out as many different ports as asked', async () => {
    const ports = await distinctFreePorts(4);
    expect(new Set(ports).size).toBe(4);
    for (const p of ports) expect(p).toBeGreaterThan(0);
  });
});

describe('waitForLoopbackListener', () => {
  it('resolves once something listens on the port, even if it starts listening late', async () => {
    const port = await freeLoopbackPort();
    const server = createServer((socket) => socket.destroy());
    setTimeout(() => server.listen(port, '127.0.0.1'), 150);
    try {
      await waitForLoopbackListener(port, 5_000, () => true);
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });

  it('gives up after its timeout when nothing listens', async () => {
    const port = await freeLoopbackPort();
    await expect(waitForLoopbackListener(port, 200, () => true)).rejects.toThrow(
      `nothing listened on 127.0.0.1:${port} within 200 ms`,
    );
  });

  it('stops waiting as soon as the process that should listen is gone', async () => {
    const port = await freeLoopbackPort();
    // A minute's timeout: only the early stop can settle this within the test's own time limit.
    await expect(waitForLoopbackListener(port, 60_000, () => false)).rejects.toThrow(
      `exited before listening on port ${port}`,
    );
  });
});
