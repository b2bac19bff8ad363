import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { QueueLinkHandler } from '../cluster/queue-link.ts';
import { QueueLinkError } from '../cluster/queue-link.ts';
import { decodeCommandAnswer, decodeCounts, QueueLinkCode, QueueOp } from '../cluster/queue-rpc-codec.ts';
import { silentLogger } from '../logging/logger.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import { GROUP, makeActor, ScriptedLog } from '../queue/queue-actor-test-support.ts';
import { queueConfig } from '../queue/queue-test-harness.ts';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import type { ClusterQueuesHost, QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues, LEADERLESS_HOLD_MS, ownerNodeName } from './cluster-queues.ts';
import { quietQueuesHost } from './cluster-queues-test-support.ts';
import type { PeerStatus } from './owner-suspicion.ts';

describe('ownerNodeName', () => {
  it.each([
    // owner ids: `${nodeName}:${run}.${n}/${channel}` (run is base64url: no ':', '/' or '.')
    ['styx-1:AbC-_9.3/7', 'styx-1'],
    ['styx-1:AbC-_9.12/65535', 'styx-1'],
    // node names are free text: colons, dots and slashes in them
    ['host:5672:AbCd.1/1', 'host:5672'],
    ['node.example.com:run.4/2', 'node.example.com'],
    ['rack/1:run.4/2', 'rack/1'],
    ['ñœud-ü:run.1/1', 'ñœud-ü'],
    // connection ids (no channel)
    ['styx-2:run.9', 'styx-2'],
    ['a:b:run.9', 'a:b'],
  ])('%s → %s', (owner, name) => {
    expect(ownerNodeName(owner)).toBe(name);
  });

  it('an id without a node part names itself (a single node’s owners, before clustering)', () => {
    expect(ownerNodeName('conn-1/1')).toBe('conn-1');
    expect(ownerNodeName('plain')).toBe('plain');
  });
});

describe('ClusterQueues: suspicion before verdict for the owners of other nodes', () => {
  const OWNER = 'n2:run1.1/1';
  // The per-second check runs on a timer: time is driven by the tests.
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /**
   * One leading replica on this node, holding an owner of node n2 (run `run1`); the failure
   * detector's view of n2, the metadata and the link faked. The queue's timeout is `timeoutArg`.
   */
  function setUp(timeoutArg?: number, suspicionFlag = true) {
    const down = new Set<(id: string) => void>();
    const up = new Set<(id: string) => void>();
    const calls: { peer: string; op: number }[] = [];
    let handler: QueueLinkHandler | undefined;
    let failNext = 0;
    let reasserted = 0;
    const lost: string[] = [];
    const suspensions: [string, boolean][] = [];
    let status: PeerStatus = { suspected: false, unreachableMs: 0, incarnation: 'run1' };
    let pendingDeadLetters = false;
    let deadLetterWakes = 0;
    const actor = {
      groupId: 'g1',
      vhost: '/',
      name: 'q1',
      isLeader: true,
      ownerIds: () => [OWNER],
      ownerLost: (owner: string) => lost.push(owner),
      setOwnerSuspended: (owner: string, suspended: boolean) => suspensions.push([owner, suspended]),
      hasPendingDeadLetters: () => pendingDeadLetters,
      wakeDeadLetters: () => {
        deadLetterWakes++;
      },
    } as unknown as QueueActor;
    const nodes = [
      { id: 'id-n1', name: 'n1' },
      { id: 'id-n2', name: 'n2' },
    ];
    const args =
      timeoutArg === undefined
        ? []
        : [{ key: 'x-consumer-disconnected-timeout', value: { i32: timeoutArg } }];
    const host = quietQueuesHost({
      metadata: {
        clusterNode: (key: string) => nodes.find((n) => n.id === key || n.name === key),
        queue: () => ({ vhost: '/', name: 'q1', arguments: { entries: args } }),
        policyFor: () => undefined,
      },
      replicas: () => [actor],
      reassertConsumers: () => {
        reasserted++;
      },
    });
    const port: QueueClusterPort = {
      nodeId: 'id-n1',
      queueLink: {
        call: (peer, op) => {
          calls.push({ peer, op });
          if (failNext > 0) {
            failNext--;
            return Promise.reject(new Error('link lost'));
          }
          return Promise.resolve(new Uint8Array(0));
        },
        handle: (h) => {
          handler = h;
        },
      },
      isDown: () => status.suspected,
      peerStatus: () => status,
      featureFlags: {
        isEnabled: (name) => name !== 'consumer_suspicion' || suspicionFlag,
        isSupported: () => true,
      },
      onNodeDown: (listener) => {
        down.add(listener);
        return () => down.delete(listener);
      },
      onNodeUp: (listener) => {
        up.add(listener);
        return () => up.delete(listener);
      },
    };
    const queues = new ClusterQueues(host, port);
    return {
      queues,
      calls,
      lost,
      suspensions,
      reasserted: () => reasserted,
      deadLetterWakes: () => deadLetterWakes,
      setPendingDeadLetters: (pending: boolean) => {
        pendingDeadLetters = pending;
      },
      forget: (id: string) => {
        nodes.splice(
          nodes.findIndex((n) => n.id === id),
          1,
        );
      },
      failNext: (n: number) => {
        failNext = n;
      },
      serve: (op: number) => (handler as QueueLinkHandler)(op, '', new Uint8Array(0), 'id-n2'),
      /** n2 suspected for `unreachableMs` so far (the detector's event). */
      down: (unreachableMs = 0) => {
        status = { ...status, suspected: true, unreachableMs };
        for (const l of down) l('id-n2');
      },
      /** n2 still suspected, `unreachableMs` now (no event: the per-second check sees it). */
      stillDown: (unreachableMs: number) => {
        status = { ...status, suspected: true, unreachableMs };
      },
      /** n2 answers again, as `incarnation`. */
      up: (incarnation = 'run1') => {
        status = { suspected: false, unreachableMs: 0, incarnation };
        for (const l of up) l('id-n2');
      },
    };
  }

  it('suspends a suspected node’s owners, keeps what they hold, and resumes them when it answers', () => {
    const t = setUp();
    t.down(1_000);
    expect(t.suspensions).toEqual([[OWNER, true]]);
    t.stillDown(59_000); // under the 60 s default
    t.up();
    expect(t.suspensions).toEqual([
      [OWNER, true],
      [OWNER, false],
    ]);
    expect(t.lost).toEqual([]);
    expect(t.calls).toEqual([]); // nothing was given up: nothing to register again
    t.queues.stop();
  });

  it('when a node answers again, a leading queue retries its waiting dead-letter hand-offs at once', () => {
    const t = setUp();
    t.down(1_000);
    t.up();
    expect(t.deadLetterWakes()).toBe(0); // nothing pending: nothing to wake
    t.setPendingDeadLetters(true);
    t.down(1_000);
    expect(t.deadLetterWakes()).toBe(0); // a node going away gives a hand-off nowhere new to go
    t.up();
    expect(t.deadLetterWakes()).toBe(1);
    t.queues.stop();
  });

  it('gives the owners up once the node stayed suspected past the queue’s timeout (checked every second)', async () => {
    const t = setUp(5_000);
    t.down(1_000);
    t.stillDown(4_900);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.lost).toEqual([]);
    t.stillDown(5_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.lost).toEqual([OWNER]);
    // Back with the same process: told once to register its consumers again.
    t.up();
    t.up();
    expect(t.calls).toEqual([{ peer: 'id-n2', op: QueueOp.reassert }]);
    t.queues.stop();
  });

  it('the default timeout is 60 s', async () => {
    const t = setUp();
    t.down(59_999);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.lost).toEqual([]);
    t.stillDown(60_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.lost).toEqual([OWNER]);
    t.queues.stop();
  });

  it('gives up at once the owners of a node that restarted (a new incarnation), without a notice', () => {
    const t = setUp();
    t.down(500);
    t.up('run2');
    expect(t.lost).toEqual([OWNER]);
    expect(t.calls).toEqual([]);
    // Its channels died with the old process: deliveries to them go nowhere.
    expect(t.queues.resolveOwner(OWNER)).toBeUndefined();
    expect(t.queues.resolveOwner('n2:run2.1/1')).toBeDefined();
    t.queues.stop();
  });

  it('gives up the owners of a forgotten node at the next check', async () => {
    const t = setUp();
    t.forget('id-n2');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.lost).toEqual([OWNER]);
    expect(t.calls).toEqual([]);
    t.queues.stop();
  });

  it('while the consumer_suspicion flag is off (a rolling upgrade), gives a suspected node’s owners up at once', () => {
    const t = setUp(undefined, false);
    t.down(0);
    expect(t.suspensions).toEqual([]);
    expect(t.lost).toEqual([OWNER]);
    t.queues.stop();
  });

  it('still delivers to a suspected node’s owner (the sends are held and sent again)', () => {
    const t = setUp();
    t.down(1_000);
    expect(t.queues.resolveOwner(OWNER)).toBeDefined();
    t.queues.stop();
  });

  it('tries the notice again while the node is up and it is lost', async () => {
    const t = setUp(0);
    t.failNext(2);
    t.down(0);
    expect(t.lost).toEqual([OWNER]);
    t.up();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(t.calls.map((c) => c.op)).toEqual([QueueOp.reassert, QueueOp.reassert, QueueOp.reassert]);
    t.queues.stop();
  });

  it('keeps telling a node that is up, with capped back-off, until it hears; not once it is forgotten', async () => {
    const t = setUp(0);
    t.failNext(30);
    t.down(0);
    t.up();
    // 10 tries used to be all it got (5 s): a node that stays unreachable that long kept no consumers.
    await vi.advanceTimersByTimeAsync(120_000);
    expect(t.calls.length).toBeGreaterThan(11);
    expect(t.calls.length).toBeLessThan(25); // backed off: at most one try per 10 s past the first few
    t.failNext(0);
    await vi.advanceTimersByTimeAsync(60_000);
    const told = t.calls.length;
    expect(told).toBeLessThan(31);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(t.calls.length).toBe(told); // heard: no more tries

    const u = setUp(0);
    u.failNext(100);
    u.down(0);
    u.up();
    await vi.advanceTimersByTimeAsync(1_000);
    u.forget('id-n2');
    const before = u.calls.length;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(u.calls.length).toBeLessThanOrEqual(before + 1);
    t.queues.stop();
    u.queues.stop();
  });

  it('on the told node, registers every local consumer again', async () => {
    const t = setUp();
    await t.serve(QueueOp.reassert);
    expect(t.reasserted()).toBe(1);
    t.queues.stop();
  });
});

describe('ClusterQueues: a command reaching a replica in the middle of an election', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** This node serving the link for its replica of GROUP, a follower that knows no leader. */
  async function setUp() {
    const log = new ScriptedLog('follower');
    const { actor } = makeActor(log);
    await actor.open();
    log.append({ type: 'setConfig', config: queueConfig() });
    let handler: QueueLinkHandler | undefined;
    const host = {
      metadata: {
        clusterNode: () => undefined,
        queues: () => [],
        queue: () => undefined,
        policyFor: () => undefined,
      },
      logger: silentLogger(),
      replica: (group: string) => (group === GROUP ? actor : undefined),
      replicas: () => [actor],
      localChannel: () => undefined,
      reassertConsumers: () => {},
      startReplica: async () => {},
      dropReplica: async () => {},
    } as unknown as ClusterQueuesHost;
    const port = {
      nodeId: 'id-n1',
      queueLink: {
        call: () => Promise.resolve(new Uint8Array(0)),
        handle: (h: QueueLinkHandler) => {
          handler = h;
        },
      },
      isDown: () => false,
      peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: 'run1' }),
      onNodeDown: () => () => {},
      onNodeUp: () => () => {},
    } as unknown as QueueClusterPort;
    const queues = new ClusterQueues(host, port);
    /** Serve `op` for `group`; the outcome is recorded as it settles. */
    const serve = (op: number, body: Uint8Array = new Uint8Array(0), group = GROUP) => {
      const outcome: { answer?: Uint8Array; error?: unknown; settled: boolean } = { settled: false };
      void Promise.resolve()
        .then(() => (handler as QueueLinkHandler)(op, group, body, 'id-n2'))
        .then(
          (answer) => Object.assign(outcome, { answer, settled: true }),
          (error: unknown) => Object.assign(outcome, { error, settled: true }),
        );
      return outcome;
    };
    const purge = () => serve(QueueOp.command, queueCommandCodec.encode({ type: 'purge' }));
    return { queues, log, actor, serve, purge };
  }

  it('holds the command, then runs it here the moment this replica wins, in arrival order', async () => {
    const t = await setUp();
    const first = t.purge();
    const second = t.serve(QueueOp.counts);
    await vi.advanceTimersByTimeAsync(LEADERLESS_HOLD_MS / 2);
    expect(first.settled).toBe(false);
    expect(second.settled).toBe(false);
    t.log.setRole('leader');
    await vi.advanceTimersByTimeAsync(0);
    expect(decodeCommandAnswer(first.answer as Uint8Array).reply).toEqual({ type: 'purged', count: 0 });
    expect(decodeCounts(second.answer as Uint8Array)).toMatchObject({ ready: 0 });
    expect(t.log.proposed.map((c) => c.type)).toEqual(['purge']);
    t.queues.stop();
  });

  it('answers NOT_LEADER naming the winner the moment a follower here learns it', async () => {
    const t = await setUp();
    const held = t.purge();
    await vi.advanceTimersByTimeAsync(100);
    expect(held.settled).toBe(false);
    t.log.setRole('follower', 'id-n3');
    await vi.advanceTimersByTimeAsync(0);
    expect(held.error).toBeInstanceOf(QueueLinkError);
    expect(held.error).toMatchObject({ code: QueueLinkCode.notLeader, message: 'id-n3' });
    expect(t.log.proposed).toEqual([]);
    t.queues.stop();
  });

  it('answers NOT_LEADER without a hint once the hold is over and no election ended', async () => {
    const t = await setUp();
    const held = t.purge();
    await vi.advanceTimersByTimeAsync(LEADERLESS_HOLD_MS - 1);
    expect(held.settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(held.error).toMatchObject({ code: QueueLinkCode.notLeader, message: '' });
    t.queues.stop();
  });

  it('does not hold when a leader is known: NOT_LEADER with its name at once', async () => {
    const t = await setUp();
    t.log.setRole('follower', 'id-n3');
    const answered = t.purge();
    await vi.advanceTimersByTimeAsync(0);
    expect(answered.error).toMatchObject({ code: QueueLinkCode.notLeader, message: 'id-n3' });
    t.queues.stop();
  });

  it('a group with no replica here is answered UNKNOWN_GROUP at once, not held', async () => {
    const t = await setUp();
    const answered = t.serve(QueueOp.counts, new Uint8Array(0), 'vh/other/1');
    await vi.advanceTimersByTimeAsync(0);
    expect(answered.error).toMatchObject({ code: QueueLinkCode.unknownGroup });
    t.queues.stop();
  });
});
