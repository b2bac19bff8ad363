import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionError } from '../errors/amqp-error.ts';
import { silentLogger } from '../logging/logger.ts';
import { BasicAuthenticator } from '../management/basic-auth.ts';
import { DECOY_PASSWORD_HASH, hashPassword, verifyPassword } from '../metadata/passwords.ts';
import { Broker } from './broker.ts';

// The client login (WebSocket connections) and the management basic auth share the broker's
// verified-login cache: a reconnection storm with the same account costs one scrypt, and any
// change to a user applied through the metadata log drops its entries.

let broker: Broker | undefined;

afterEach(async () => {
  await broker?.shutdown();
  broker = undefined;
});

/** A broker whose scrypt calls are counted: `checks` against users' hashes, `decoys` otherwise. */
async function start() {
  const checks: string[] = [];
  const decoys: string[] = [];
  const started = await Broker.start({
    nodeName: 'logins-test',
    logger: silentLogger(),
    memoryBudgetBytes: 0,
    verifyPassword: (password, hash) => {
      (hash === DECOY_PASSWORD_HASH ? decoys : checks).push(password);
      return verifyPassword(password, hash);
    },
  });
  broker = started;
  let id = 0;
  const login = (user: string, password: string) =>
    started.gate.authenticate(user, password, '/', '127.0.0.1', `c${++id}`);
  return { broker: started, checks, decoys, login };
}

describe('broker logins through the verified-login cache', () => {
  it('a second client login skips scrypt; the management API shares the entry', async () => {
    const { broker, checks, login } = await start();
    await login('guest', 'guest');
    await login('guest', 'guest');
    expect(checks).toEqual(['guest']);
    const basic = new BasicAuthenticator({
      lookup: (name) => broker.metadataView.user(name),
      loopbackOnly: () => false,
      logins: broker.logins,
    });
    await basic.verifyCredentials('guest', 'guest', '127.0.0.1');
    expect(checks).toEqual(['guest']);
  });

  it('a wrong password and an unknown user always cost a scrypt', async () => {
    const { checks, decoys, login } = await start();
    for (let i = 0; i < 2; i++) {
      await expect(login('guest', 'wrong')).rejects.toBeInstanceOf(ConnectionError);
      await expect(login('nobody', 'guest')).rejects.toBeInstanceOf(ConnectionError);
    }
    expect(checks).toEqual(['wrong', 'wrong']);
    expect(decoys).toEqual(['guest', 'guest']);
  });

  it('a user change applied by the metadata log drops its entries: tags, password, deletion', async () => {
    const { broker, checks, login } = await start();
    await login('guest', 'guest');
    const guest = broker.metadataView.user('guest');
    if (guest === undefined) throw new Error('no guest');
    // Same hash, other tags: evicted all the same.
    await broker.manage({ type: 'putUser', name: 'guest', passwordHash: guest.passwordHash, tags: [] });
    await login('guest', 'guest');
    expect(checks).toEqual(['guest', 'guest']);
    // A new password: the old one is refused at once.
    const passwordHash = await hashPassword('fresh');
    await broker.manage({ type: 'putUser', name: 'guest', passwordHash, tags: ['administrator'] });
    await expect(login('guest', 'guest')).rejects.toBeInstanceOf(ConnectionError);
    await login('guest', 'fresh');
    await broker.manage({ type: 'deleteUser', name: 'guest' });
    await expect(login('guest', 'fresh')).rejects.toBeInstanceOf(ConnectionError);
    expect(broker.logins.size).toBe(0);
  });
});
