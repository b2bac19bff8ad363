import * as amqp from '@styx/client';
import { describe, expect, it } from 'vitest';
import { rejectionOf, unique, useBroker, WAIT_MS, withTimeout } from './messaging-helpers.ts';

// Authentication and vhosts against a real `styx server`: the default user guest/guest on the
// default vhost '/', and the codes a refused handshake gives (403 bad credentials, 530 vhost).
const { broker, connect } = useBroker();

describe('the default user and vhost', () => {
  it('guest/guest connects from loopback to vhost /, by default and when named', async () => {
    const conn = await connect();
    expect(conn.serverProperties).toMatchObject({ product: 'Styx' });
    expect(conn.connectionName).not.toBe('');
    const ch = await conn.createChannel();
    const { queue } = await ch.assertQueue(unique('q.auth'), { durable: false });
    // vhost '/' named explicitly (URL-encoded), with credentials in the URL: the same vhost.
    const { port } = broker();
    const named = await withTimeout(
      amqp.connect(`styx://guest:guest@127.0.0.1:${port}/%2F`),
      WAIT_MS,
      'connect with a named vhost',
    );
    try {
      const other = await named.createChannel();
      expect(await other.checkQueue(queue)).toMatchObject({ queue });
    } finally {
      await named.close();
    }
    // An amqp:// URL pasted from a RabbitMQ setup works when it carries the port.
    const pasted = await withTimeout(amqp.connect(`amqp://127.0.0.1:${port}`), WAIT_MS, 'amqp URL');
    await pasted.close();
    await ch.deleteQueue(queue);
  });

  it('a wrong password or an unknown user is refused with 403, in the same words', async () => {
    const { url } = broker();
    const wrong = await rejectionOf(
      amqp.connect(url, { credentials: amqp.credentials.plain('guest', 'wrong') }),
      'a refused login',
    );
    expect(wrong.code).toBe(403);
    expect(wrong.message).toContain("login refused: user 'guest' - invalid credentials");
    const unknown = await rejectionOf(
      amqp.connect(url, { username: 'nobody', password: 'guest' }),
      'a refused login',
    );
    expect(unknown.code).toBe(403);
    expect(unknown.message).toContain("login refused: user 'nobody' - invalid credentials");
  });

  it('an unknown vhost is refused with 530 NOT_ALLOWED', async () => {
    const err = await rejectionOf(amqp.connect(`${broker().url}/no-such-vhost`), 'a refused vhost');
    expect(err.code).toBe(530);
    expect(err.message).toContain("vhost 'no-such-vhost' not found");
  });

  it('a refused handshake leaves other clients working', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    await rejectionOf(amqp.connect(broker().url, { username: 'guest', password: 'nope' }), 'a refused login');
    await expect(ch.checkExchange('amq.direct')).resolves.toEqual({});
  });

  // Not testable here: guest being refused from a non-loopback address needs a client on another
  // interface (these tests stay on 127.0.0.1; the rule is unit-tested in broker/loopback.test.ts),
  // and other users need the management API, which does not exist yet.
  it.todo('guest is refused (403) when connecting from a non-loopback address');
  it.todo('a user added through the management API logs in and is held to its vhost permissions');
});
