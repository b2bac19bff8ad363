/** A free TCP port on loopback, for a flag that cannot take port 0. */
import { createServer } from 'node:net';

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
