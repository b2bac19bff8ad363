/**
 * QueueBrowser across nodes, with real queue actors as the replicas and the cluster RPC's calls
 * carried in memory (a handler's RpcError reaches the caller as RpcRemoteError, an unknown node is
 * unreachable, as cluster-rpc.ts does). The same across real processes: test/cluster/dead-letter-inspector.test.ts.
 */
import type { RoleChange } from '@styx/raft';
import { PeerUnreachableError } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { RpcError, RpcRemoteError } from '../cluster/cluster-rpc.ts';
import { silentLogger } from '../logging/logger.ts';
import type { QueueRecord } from '../metadata/types.ts';
import { BrowseRequestError } from '../queue/message-browse.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import { enqueueCommand, GROUP, makeActor, ScriptedLog } from '../queue/queue-actor-test-support.ts';
import { queueRecord } from '../test-support/queue-record.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import { QUEUE_BROWSE_RPC, QueueBrowser } from './queue-browse.ts';
import {
  decodeBrowsePage,
  decodeBrowseRequest,
  encodeBrowsePage,
  encodeBrowseRequest,
} from './queue-browse-codec.ts';

type Handler = (payload: Uint8Array, from: string) => Promise<Uint8Array>;

/** A ScriptedLog whose follower can be told who leads (as Raft's heartbeats tell it). */
class FollowerLog extends ScriptedLog {
  readonly #listeners: ((change: RoleChange) => void)[] = [];
  constructor() {
    super('follower');
  }
  override onRole(listener: (change: RoleChange) => void): () => void {
    this.#listeners.push(listener);
    return super.onRole(listener);
  }
  leaderIs(leader: string): void {
    for (const listener of this.#listeners) listener({ role: 'follower', term: 1, leader });
  }
}

/** Nodes that call each other's RPC handlers in memory. */
class Network {
  readonly handlers = new Map<string, Map<string, Handler>>();
  readonly calls: string[] = [];

  node(id: string): Pick<BrokerCluster, 'handleRpc' | 'callRpc'> {
    return {
      handleRpc: (kind, handler) => {
        const byKind = this.handlers.get(id) ?? new Map<string, Handler>();
        this.handlers.set(id, byKind);
        byKind.set(kind, handler);
      },
      callRpc: async (peer, kind, payload) => {
        this.calls.push(peer);
        const handler = this.handlers.get(peer)?.get(kind);
        if (handler === undefined) throw new PeerUnreachableError(peer);
        try {
          return await handler(payload, id);
        } catch (error) {
          if (error instanceof RpcError) throw new RpcRemoteError(error.code, error.message, peer, kind);
          throw new RpcRemoteError('INTERNAL', String(error), peer, kind);
        }
      },
    };
  }
}

const RECORD: QueueRecord = queueRecord({ groupId: GROUP, members: ['n1', 'n2', 'n3', 'n4'] });

function browserOn(
  network: Network,
  id: string,
  replica: QueueActor | undefined,
  hint?: string,
): QueueBrowser {
  return new QueueBrowser({
    selfId: id,
    logger: silentLogger(),
    replica: (groupId) => (groupId === GROUP ? replica : undefined),
    membersOf: (record) => record.members ?? [],
    leaderHint: () => hint,
    cluster: network.node(id),
  });
}

const REQUEST = { offset: 0, limit: 10, bodyBytes: 3, filter: {} };

/** n1 browses: n2 is a follower that knows no leader, n3 a follower that names n4, n4 leads; n5 is down. */
async function cluster() {
  const network = new Network();
  const leaderLog = new ScriptedLog('leader');
  const leader = makeActor(leaderLog).actor;
  await leader.open();
  for (const body of ['first', 'second']) {
    await leader.run(
      enqueueCommand({
        exchange: '',
        routingKey: 'q',
        properties: {},
        body: Buffer.from(body),
        bcc: undefined,
      }),
    );
  }
  const blind = makeActor(new FollowerLog()).actor;
  await blind.open();
  const hintingLog = new FollowerLog();
  const hinting = makeActor(hintingLog).actor;
  await hinting.open();
  hintingLog.leaderIs('n4');
  browserOn(network, 'n2', blind);
  browserOn(network, 'n3', hinting);
  browserOn(network, 'n4', leader);
  return { network, leader };
}

describe('QueueBrowser', () => {
  it('reads on the leader: follows NOT_LEADER answers and tries the replicas in turn', async () => {
    const { network } = await cluster();
    const page = await browserOn(network, 'n1', undefined, 'n3').browse(RECORD, REQUEST);
    expect(page.leader).toBe('n4');
    expect(page.messages.map((m) => Buffer.from(m.message?.body ?? []).toString())).toEqual(['fir', 'sec']);
    expect(page.messages.map((m) => m.size)).toEqual([5, 6]);
    // The hint first (n3), which named the leader.
    expect(network.calls).toEqual(['n3', 'n4']);
  });

  it('goes past a replica that does not know the leader, and an unreachable member', async () => {
    const { network } = await cluster();
    const page = await browserOn(network, 'n1', undefined, 'n5').browse(
      { ...RECORD, members: ['n1', 'n5', 'n2', 'n4'] },
      REQUEST,
    );
    expect(page.leader).toBe('n4');
    expect(network.calls).toEqual(['n5', 'n2', 'n4']);
  });

  it('reads the local replica when it leads, without a call', async () => {
    const { network, leader } = await cluster();
    const page = await browserOn(network, 'n4', leader).browse(RECORD, REQUEST);
    expect(page.leader).toBe('n4');
    expect(page.messages).toHaveLength(2);
    expect(network.calls).toEqual([]);
  });

  it('refuses a request out of range before asking anyone, and the leader refuses a malformed one', async () => {
    const { network } = await cluster();
    await expect(
      browserOn(network, 'n1', undefined).browse(RECORD, { ...REQUEST, limit: 0 }),
    ).rejects.toThrow(BrowseRequestError);
    expect(network.calls).toEqual([]);
    const handler = network.handlers.get('n4')?.get(QUEUE_BROWSE_RPC) as Handler;
    await expect(handler(new TextEncoder().encode('{"groupId":1}'), 'n1')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(handler(new TextEncoder().encode('not json'), 'n1')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    const unknownField = new TextEncoder().encode(
      JSON.stringify({ groupId: GROUP, offset: 0, limit: 1, bodyBytes: 0, filter: { reasons: [] } }),
    );
    await expect(handler(unknownField, 'n1')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: "unknown filter field 'reasons'",
    });
  });
});

describe('queue-browse-codec', () => {
  it('carries a request and a page, bodies and a missing body included', () => {
    const request = {
      groupId: 'g',
      after: 7,
      offset: 1,
      limit: 2,
      bodyBytes: 3,
      filter: { reason: 'rejected' as const, headers: [{ name: 'a', value: 'b' }] },
    };
    expect(decodeBrowseRequest(encodeBrowseRequest(request), 10)).toEqual(request);
    expect(() => decodeBrowseRequest(encodeBrowseRequest(request), 2)).toThrow(/'body_bytes'/);
    const page = {
      messages: [
        {
          id: 9,
          enqueuedAt: 1000,
          deliveryCount: 1,
          redelivered: true,
          size: 10,
          expiresAt: 5000,
          message: {
            exchange: 'x',
            routingKey: 'k',
            properties: { headers: { entries: [{ key: 'h', value: { i64: 1 } }] } },
            body: Buffer.from('abc'),
            bcc: ['b'],
          },
        },
        {
          id: 10,
          enqueuedAt: 2000,
          deliveryCount: 0,
          redelivered: false,
          size: 4,
          expiresAt: undefined,
          message: undefined,
        },
      ],
      ready: 2,
      scanned: 2,
      next: undefined,
      offsetLeft: 0,
      appliedIndex: 12,
      readAt: 3000,
    };
    const decoded = decodeBrowsePage(encodeBrowsePage(page));
    expect(decoded.messages[1]).toEqual(page.messages[1]);
    expect(decoded.messages[0]).toMatchObject({ id: 9, size: 10, expiresAt: 5000, redelivered: true });
    expect(Buffer.from(decoded.messages[0]?.message?.body ?? []).toString()).toBe('abc');
    expect(decoded.messages[0]?.message?.properties.headers).toEqual(
      page.messages[0]?.message?.properties.headers,
    );
    expect(decoded).toMatchObject({ ready: 2, next: undefined, appliedIndex: 12, readAt: 3000 });
    const bytes = encodeBrowsePage(page);
    expect(() => decodeBrowsePage(bytes.subarray(0, bytes.length - 1))).toThrow();
  });
});
