import { describe, expect, it } from 'vitest';
import type { Connection } from '../connection/connection.ts';
import { IllegalOperationError, NodesUnreachableError, ServerCloseError } from '../errors.ts';
import { connectFake, FakePeer, settle } from '../test-support/fake-peer.ts';
import { frame } from '../wire/index.ts';
import type { RecoveringConnectionComponents } from './recovering-connection.ts';
import { RecoveringConnection } from './recovering-connection.ts';

type NodeState = 'up' | 'down' | 'refuse';

/** Nodes whose state the test flips; dial() opens a fake connection to an 'up' node. */
function cluster(...states: NodeState[]) {
  const peers: FakePeer[] = [];
  const dialled: number[] = [];
  const setups: Connection[] = [];
  const components = (
    overrides: Partial<RecoveringConnectionComponents> = {},
  ): RecoveringConnectionComponents => ({
    urlCount: states.length,
    dial: async (index) => {
      dialled.push(index);
      const state = states[index];
      if (state === 'down') throw new Error('connect ECONNREFUSED');
      if (state === 'refuse') throw new ServerCloseError('403 (ACCESS-REFUSED)', 403);
      const peer = new FakePeer();
      peers.push(peer);
      return connectFake(peer, `ws://node${index}.test:5680/`);
    },
    setup: (conn) => {
      setups.push(conn);
    },
    backoff: { minDelayMs: 0, maxDelayMs: 0 },
    maxAttempts: Number.POSITIVE_INFINITY,
    random: () => 0,
    ...overrides,
  });
  return { states, peers, dialled, setups, components };
}

/** The socket of `peer` drops, as when its node is SIGKILLed. */
function drop(peer: FakePeer | undefined): void {
  peer?.handlers?.close(1006, '');
}

function nextEvent(conn: RecoveringConnection, event: 'recovered' | 'close'): Promise<unknown[]> {
  return new Promise((resolve) => conn.once(event, (...args: unknown[]) => resolve(args)));
}

describe('RecoveringConnection', () => {
  it('starts on the first reachable URL, in order, and runs setup there', async () => {
    const c = cluster('down', 'up', 'up');
    const conn = await new RecoveringConnection(c.components())._start();
    expect(c.dialled).toEqual([0, 1]);
    expect(conn.urlIndex).toBe(1);
    expect(c.setups).toHaveLength(1);
    expect(conn.connection).toBe(c.setups[0]);
    await closeFake(conn, c.peers[0]);
  });

  it('after a loss, reconnects to the next URL, re-runs setup and emits disconnected then recovered', async () => {
    const c = cluster('up', 'down', 'up');
    const conn = await new RecoveringConnection(c.components())._start();
    const events: string[] = [];
    conn.on('disconnected', (err) => events.push(`disconnected: ${err.message}`));
    const recovered = nextEvent(conn, 'recovered');
    c.states[0] = 'down';
    drop(c.peers[0]);
    expect(conn.connection).toBeNull();
    const [newConn, index] = await recovered;
    expect(events).toEqual(['disconnected: Unexpected close']);
    expect(c.dialled).toEqual([0, 1, 2]); // the dead node 0 would be tried last
    expect(index).toBe(2);
    expect(newConn).toBe(c.setups[1]);
    expect(conn.connection).toBe(newConn);
    await closeFake(conn, c.peers[1]);
  });

  it('makes createChannel wait for the recovered connection', async () => {
    const c = cluster('up', 'up');
    const conn = await new RecoveringConnection(
      c.components({ backoff: { minDelayMs: 20, maxDelayMs: 20 } }),
    )._start();
    drop(c.peers[0]);
    const opening = conn.createChannel();
    await nextEvent(conn, 'recovered');
    await settle();
    const peer = c.peers[1] as FakePeer;
    const open = peer.takeOne('channelOpen');
    peer.send(frame(open.channel, 'channelOpenOk', {}));
    const ch = await opening;
    expect(ch.connection).toBe(conn.connection);
    await closeFake(conn, peer);
  });

  it('never recovers after a deliberate close()', async () => {
    const c = cluster('up', 'up');
    const conn = await new RecoveringConnection(c.components())._start();
    const closed = nextEvent(conn, 'close');
    await closeFake(conn, c.peers[0]);
    expect(await closed).toEqual([undefined]);
    await settle();
    expect(c.dialled).toEqual([0]);
    await expect(conn.createChannel()).rejects.toBeInstanceOf(IllegalOperationError);
  });

  it('gives up at once on a 403 refusal: error (if listened) and close with it', async () => {
    const c = cluster('up', 'refuse', 'up');
    const conn = await new RecoveringConnection(c.components())._start();
    const errors: Error[] = [];
    conn.on('error', (err) => errors.push(err));
    const closed = nextEvent(conn, 'close');
    drop(c.peers[0]);
    const [err] = await closed;
    expect(err).toBeInstanceOf(ServerCloseError);
    expect(errors).toEqual([err]);
    expect(c.dialled).toEqual([0, 1]);
  });

  it('gives up with NodesUnreachableError after maxAttempts and rejects waiting operations', async () => {
    const c = cluster('up', 'down');
    const conn = await new RecoveringConnection(c.components({ maxAttempts: 3 }))._start();
    c.states[0] = 'down';
    const closed = nextEvent(conn, 'close');
    drop(c.peers[0]);
    const waiting = conn.createConfirmChannel();
    const [err] = await closed;
    expect(err).toBeInstanceOf(NodesUnreachableError);
    expect((err as NodesUnreachableError).attempts).toBe(3);
    expect(((err as Error).cause as Error).message).toBe('connect ECONNREFUSED');
    expect(c.dialled).toEqual([0, 1, 0, 1]);
    await expect(waiting).rejects.toBe(err);
  });

  it('rejects connect() with a setup error on the first connection without trying other nodes', async () => {
    const c = cluster('up', 'up');
    const bug = new Error('setup bug');
    const pending = new RecoveringConnection(
      c.components({
        setup: () => {
          throw bug;
        },
      }),
    )._start();
    // setup's failure closes the fresh connection; answer its close.
    await settle();
    const peer = c.peers[0] as FakePeer;
    peer.takeOne('connectionClose');
    peer.send(frame(0, 'connectionCloseOk', {}));
    await expect(pending).rejects.toBe(bug);
    expect(c.dialled).toEqual([0]);
  });
});

/** close() on a fake connection: the peer answers ConnectionClose with CloseOk. */
async function closeFake(conn: RecoveringConnection, peer: FakePeer | undefined): Promise<void> {
  const closing = conn.close();
  await settle();
  peer?.take();
  peer?.send(frame(0, 'connectionCloseOk', {}));
  await closing;
}
