import { networkInterfaces } from 'node:os';
import * as amqp from '@styx/client';
import { describe, expect, it } from 'vitest';
import { guestApi, rejectionOf, unique, useBroker, WAIT_MS, withTimeout } from './messaging-helpers.ts';

// Authentication and vhosts against a real `styx server`: the default user guest/guest on the
// default vhost '/', and the codes a refused handshake gives (403 bad credentials, 530 vhost).
const { broker, connect } = useBroker({ management: true });

/**
 * An address of this machine that is not loopback (its first external IPv4 interface), if it has
 * one. A client socket bound to it reaches the node on 127.0.0.1 all the same — the kernel routes
 * it over the loopback device — but the node sees it come from that address.
 */
const EXTERNAL_ADDRESS = Object.values(networkInterfaces())
  .flatMap((list) => list ?? [])
  .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address;

/** A management API call as guest (setup of users, vhosts and permissions): its status. */
async function manage(method: string, path: string, body?: unknown): Promise<number> {
  return (await guestApi(broker().managementUrl as string, method, path, body)).status;
}

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

  it.skipIf(EXTERNAL_ADDRESS === undefined)(
    'guest is refused (403) when connecting from a non-loopback address',
    async () => {
      const { url } = broker();
      const fromOutside = { wsOptions: { localAddress: EXTERNAL_ADDRESS } };
      const err = await rejectionOf(amqp.connect(url, fromOutside), 'a login from a non-loopback address');
      expect(err.code).toBe(403);
      expect(err.message).toContain("user 'guest' can only connect via localhost");
      // Another user connects from there: the rule is guest's (RabbitMQ's loopback_users).
      const user = unique('remote');
      expect(await manage('PUT', `/api/users/${user}`, { password: 'pw', tags: '' })).toBe(201);
      expect(
        await manage('PUT', `/api/permissions/%2F/${user}`, { configure: '', write: '', read: '' }),
      ).toBe(201);
      const remote = await withTimeout(
        amqp.connect(url, { ...fromOutside, username: user, password: 'pw' }),
        WAIT_MS,
        'a login of another user from a non-loopback address',
      );
      await remote.close();
    },
  );

  it('a user added through the management API logs in and is held to its vhost permissions', async () => {
    const { url } = broker();
    const user = unique('alice');
    const vhost = unique('app');
    expect(await manage('PUT', `/api/vhosts/${vhost}`)).toBe(201);
    expect(await manage('PUT', `/api/users/${user}`, { password: 'alice-pw', tags: '' })).toBe(201);
    const own = `^${user}\\.`;
    expect(
      await manage('PUT', `/api/permissions/${vhost}/${user}`, { configure: own, write: own, read: own }),
    ).toBe(201);
    const as = { username: user, password: 'alice-pw' };

    const conn = await withTimeout(amqp.connect(`${url}/${vhost}`, as), WAIT_MS, 'connect as the new user');
    try {
      const ch = await conn.createChannel();
      const { queue } = await ch.assertQueue(`${user}.q`, { durable: false });
      expect(queue).toBe(`${user}.q`);
      const denied = await conn.createChannel();
      denied.on('error', () => undefined);
      const err = await rejectionOf(denied.assertQueue('others.q', { durable: false }), 'a refused declare');
      expect(err.code).toBe(403);
      expect(err.message).toContain(
        `access to queue 'others.q' in vhost '${vhost}' refused for user '${user}'`,
      );
      await ch.deleteQueue(queue);
    } finally {
      await conn.close();
    }
    // No permission in '/': 530, as a vhost it may not use.
    const elsewhere = await rejectionOf(amqp.connect(url, as), 'a login to a vhost without permissions');
    expect(elsewhere.code).toBe(530);
    expect(elsewhere.message).toContain(`access to vhost '/' refused for user '${user}'`);
    // A wrong password is refused as for anyone.
    const wrong = await rejectionOf(
      amqp.connect(`${url}/${vhost}`, { username: user, password: 'x' }),
      'a wrong password',
    );
    expect(wrong.code).toBe(403);
    // Deleted through the API, it cannot log in any more.
    expect(await manage('DELETE', `/api/users/${user}`)).toBe(204);
    const gone = await rejectionOf(amqp.connect(`${url}/${vhost}`, as), 'a deleted user');
    expect(gone.code).toBe(403);
  });
});
