// Stands in for `require('amqplib')` in amqplib's own example programs, which the tests run unchanged
// but for that one require (test/integration/amqplib-examples.test.ts). The examples connect to
// "localhost" on RabbitMQ's port (`amqp://localhost`, or connect() with no URL): here a URL that
// names no port, or no URL at all, goes to the test broker's port instead (STYX_TEST_PORT), on
// 127.0.0.1 where the test broker listens. Everything else is @styx/client as it is.
import type { ChannelModel, ConnectOptions, SocketOptions } from '@styx/client';
import { connect as styxConnect } from '@styx/client';

export * from '@styx/client';

function testPort(): number {
  const port = Number(process.env.STYX_TEST_PORT);
  if (!Number.isInteger(port) || port <= 0) throw new Error('STYX_TEST_PORT must name the test broker port');
  return port;
}

/** @styx/client's connect(), with a port-less localhost target pointed at the test broker. */
export function connect(url?: string | ConnectOptions, socketOptions?: SocketOptions): Promise<ChannelModel> {
  if (url === undefined) return styxConnect(`amqp://127.0.0.1:${testPort()}`, socketOptions);
  if (typeof url === 'string') {
    const parsed = new URL(url);
    if (parsed.port === '' && (parsed.hostname === 'localhost' || parsed.hostname === '')) {
      parsed.hostname = '127.0.0.1';
      parsed.port = String(testPort());
    }
    return styxConnect(parsed.toString(), socketOptions);
  }
  if (url.port === undefined && (url.hostname === undefined || url.hostname === 'localhost')) {
    return styxConnect({ ...url, hostname: '127.0.0.1', port: testPort() }, socketOptions);
  }
  return styxConnect(url, socketOptions);
}
