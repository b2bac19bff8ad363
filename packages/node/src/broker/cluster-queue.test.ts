import type { HandOffId } from '@styx/dlx';
import { GroupOverloadedError, InMemoryLog, NotLeaderError } from '@styx/raft';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { QueueLinkLostError, QueueLinkRemoteError, QueueLinkTimeoutError } from '../cluster/queue-link.ts';
import {
  decodeCommandAnswer,
  encodeBinaryAnswer,
  encodeCommandAnswer,
  encodeCounts,
  QueueLinkCode,
  QueueOp,
} from '../cluster/queue-rpc-codec.ts';
import { ChannelError, Code } from '../errors/amqp-error.ts';
import type { QueueRecord } from '../metadata/metadata-machine.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import { GROUP, makeActor, ScriptedLog } from '../queue/queue-actor-test-support.ts';
import { MachineHarness, storedMessage } from '../queue/queue-test-harness.ts';
import type {
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  QueueCounts,
  StoredMessage,
} from '../queue/types.ts';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import { queueRecord } from '../test-support/queue-record.ts';
import type { QueueNodePort } from './cluster-queue.ts';
import { ClusterQueue, FORWARD_DEADLINE_MS, QueueUnavailableError } from './cluster-queue.ts';

const SELF = 'id-self';
const SOURCE = 'p.this-run';

function record(members: readonly string[] | undefined, over: Partial<QueueRecord> = {}): QueueRecord {
  return queueRecord({ groupId: GROUP, ...(members === undefined ? {} : { members }), ...over });
}

interface Call {
  readonly peer: string;
  readonly op: number;
  readonly group: string;
  readonly command: QueueCommand | undefined;
  readonly timeoutMs: number;
}

type Responder = (call: Call, body: Uint8Array) => Promise<Uint8Array> | Uint8Array;

/** A node without network: calls go to `respond`; the local replica is whatever the test sets. */
class FakePort implements QueueNodePort {
  readonly selfId = SELF;
  readonly publishSource = SOURCE;
  readonly calls: Call[] = [];
  local: QueueActor | undefined = undefined;
  respond: Responder = () => {
    throw new Error('no responder');
  };
  /** Calls past this many fail the test (a loop that never ends). */
  maxCalls = 500;
  orderedPublishes: (() => boolean) | undefined = undefined;
  /** Off unless a test turns it on: the responders here answer op 1, in JSON. */
  binaryAnswers: () => boolean = () => false;

  replica(groupId: string): QueueActor | undefined {
    return groupId === GROUP ? this.local : undefined;
  }

  async call(
    peer: string,
    op: number,
    group: string,
    body: Uint8Array,
    timeoutMs: number,
  ): Promise<Uint8Array> {
    const command =
      op === QueueOp.command || op === QueueOp.commandBinary ? queueCommandCodec.decode(body) : undefined;
    const call: Call = { peer, op, group, command, timeoutMs };
    this.calls.push(call);
    if (this.calls.length > this.maxCalls) throw new RunawayError(this.calls);
    return this.respond(call, body);
  }

  peers(): string[] {
    return this.calls.map((c) => c.peer);
  }

  publishIds(): (HandOffId | undefined)[] {
    return this.calls.map((c) => (c.command?.type === 'enqueue' ? c.command.publishId : undefined));
  }
}

/** Thrown by the fake port when a command keeps calling without end. */
class RunawayError extends Error {
  constructor(calls: readonly Call[]) {
    super(
      `${calls.length} calls and counting: ${calls
        .slice(0, 8)
        .map((c) => c.peer)
        .join(', ')}, …`,
    );
  }
}

/** A leader's queue machine behind the link: applies each command as the leader would and answers. */
class RemoteLeader {
  readonly harness: MachineHarness;
  constructor(config: Partial<QueueConfig> = {}) {
    this.harness = new MachineHarness({ deadLetterExchange: undefined, ...config });
  }
  apply(body: Uint8Array): Uint8Array {
    const result = this.harness.apply(queueCommandCodec.decode(body));
    return encodeCommandAnswer(result.reply, undefined);
  }
  get ready(): number {
    return this.harness.machine.counts().ready;
  }
}

const notLeader = (peer: string, hint: string): QueueLinkRemoteError =>
  new QueueLinkRemoteError(QueueLinkCode.notLeader, hint, peer);

const lost = (peer: string): QueueLinkLostError => new QueueLinkLostError(peer, 'stream closed');

const message = (size = 3): StoredMessage => storedMessage(size);

afterEach(() => {
  vi.useRealTimers();
});

describe('ClusterQueue: finding the leader', () => {
  it('follows NOT_LEADER hints to the leader, then goes straight to it', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (call, body) => {
      if (call.peer !== 'id-d') throw notLeader(call.peer, 'id-d');
      return leader.apply(body);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c', 'id-d']), false, port);
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(port.peers()).toEqual(['id-b', 'id-d']);
    expect(queue.leader).toBe('id-d');
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(port.peers()).toEqual(['id-b', 'id-d', 'id-d']);
    expect(leader.ready).toBe(2);
    // Every forwarded command names the queue's group.
    expect(new Set(port.calls.map((c) => c.group))).toEqual(new Set([GROUP]));
  });

  it('a NOT_LEADER without a hint (or naming the answering node) moves on to the next replica', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (call, body) => {
      if (call.peer === 'id-b') throw notLeader(call.peer, '');
      if (call.peer === 'id-c') throw notLeader(call.peer, 'id-c');
      return leader.apply(body);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c', 'id-d']), false, port);
    await queue.purge();
    expect(port.peers()).toEqual(['id-b', 'id-c', 'id-d']);
    expect(queue.leader).toBe('id-d');
  });

  it('follows a hint even when the local replica’s own view of the leader is stale', async () => {
    const port = new FakePort();
    port.maxCalls = 50;
    // A follower here still believes id-b leads; id-b stepped down and knows id-c does.
    port.local = { isLeader: false, leaderId: 'id-b' } as unknown as QueueActor;
    const leader = new RemoteLeader();
    port.respond = (call, body) => {
      if (call.peer === 'id-b') throw notLeader('id-b', 'id-c');
      return leader.apply(body);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const outcome = await queue.enqueue(message(), undefined).catch((e: unknown) => e);
    expect(outcome).toEqual({ type: 'ok' });
    expect(port.peers().slice(0, 2)).toEqual(['id-b', 'id-c']);
  });

  it('gives up with QueueUnavailableError at the deadline even while replicas keep hinting at each other', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const port = new FakePort();
    port.maxCalls = 1_000;
    // Two replicas with stale views, each naming the other; every call takes a second (of the
    // faked clock: the back-off pauses between rounds stay real, and short).
    port.respond = (call) => {
      vi.setSystemTime(Date.now() + 1000);
      throw notLeader(call.peer, call.peer === 'id-b' ? 'id-c' : 'id-b');
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const outcome = await queue.purge().catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(QueueUnavailableError);
    // About FORWARD_DEADLINE_MS of one-second calls, not the fake port's runaway bound.
    expect(port.calls.length).toBeLessThanOrEqual(FORWARD_DEADLINE_MS / 1000 + 2);
  });

  it('no leader within the deadline: QueueUnavailableError (406) naming the queue and its replicas', async () => {
    vi.useFakeTimers();
    const port = new FakePort();
    port.respond = (call) => {
      throw call.peer === 'id-b' ? lost(call.peer) : notLeader(call.peer, '');
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    let outcome: unknown;
    const done = queue.enqueue(message(), undefined).then(
      (value) => {
        outcome = value;
      },
      (error: unknown) => {
        outcome = error;
      },
    );
    await vi.advanceTimersByTimeAsync(FORWARD_DEADLINE_MS - 1_000);
    expect(outcome).toBeUndefined();
    const before = port.calls.length;
    expect(before).toBeGreaterThan(10);
    await vi.advanceTimersByTimeAsync(2_000);
    await done;
    expect(outcome).toBeInstanceOf(QueueUnavailableError);
    expect(outcome).toBeInstanceOf(ChannelError);
    const error = outcome as QueueUnavailableError;
    expect(error.code).toBe(Code.PRECONDITION_FAILED);
    expect(error.message).toContain("queue 'q' in vhost '/'");
    expect(error.message).toContain(`${SELF}, id-b, id-c`);
    // Both replicas were tried in turn, and every attempt of the enqueue carried the same id.
    expect(new Set(port.peers())).toEqual(new Set(['id-b', 'id-c']));
    expect(new Set(port.publishIds().map((id) => JSON.stringify(id))).size).toBe(1);
    // The pause between attempts grows: far fewer calls than 15 s / 25 ms.
    expect(port.calls.length).toBeLessThan(FORWARD_DEADLINE_MS / 25 / 4);
  });

  it('UNKNOWN_GROUP, UNAVAILABLE and overload answers are retried (a replica not started yet, a busy leader)', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    const answers = [QueueLinkCode.unknownGroup, 'UNAVAILABLE', 'GROUP_OVERLOADED', 'ADMISSION_QUEUE_FULL'];
    port.respond = (call, body) => {
      const code = answers.shift();
      if (code !== undefined) throw new QueueLinkRemoteError(code, 'not yet', call.peer);
      return leader.apply(body);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(port.peers()).toEqual(['id-b', 'id-b', 'id-b', 'id-b', 'id-b']);
  });

  it('a queue without members is served by its home node', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (_call, body) => leader.apply(body);
    const queue = new ClusterQueue(record(undefined, { node: 'id-home' }), false, port);
    expect(queue.members).toEqual(['id-home']);
    await queue.touch();
    expect(port.peers()).toEqual(['id-home']);
  });
});

describe('ClusterQueue: retries and publish ids', () => {
  it.each([
    ['lost', (peer: string) => lost(peer)],
    ['timed out', (peer: string) => new QueueLinkTimeoutError(peer, 5_000)],
  ])('an enqueue whose answer was %s is sent again with the same publish id and lands once', async (_name, failure) => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    let answersLost = 1;
    port.respond = (call, body) => {
      const answer = leader.apply(body); // applied on the leader...
      if (answersLost-- > 0) throw failure(call.peer); // ...but the answer is lost
      return answer;
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const reply = await queue.enqueue(message(5), undefined);
    // The re-sent copy is recognised: the channel confirms it (a duplicate is not a nack).
    expect(reply).toEqual({ type: 'duplicate' });
    expect(leader.ready).toBe(1);
    expect(port.calls).toHaveLength(2);
    const [first, second] = port.publishIds();
    expect(first).toBeDefined();
    expect(second).toEqual(first);
    expect(first?.source.startsWith(`${SOURCE}.`)).toBe(true);
    expect(leader.harness.machine.deadLetterTotals().duplicatesDropped).toBe(1);
  });

  it('an enqueue lost before it reached the leader lands on the retry', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    let failures = 2;
    port.respond = (call, body) => {
      if (failures-- > 0) throw lost(call.peer);
      return leader.apply(body);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(leader.ready).toBe(1);
    expect(port.calls).toHaveLength(3);
  });

  it('a hand-off enqueue keeps its hand-off id and gets no publish id', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (_call, body) => leader.apply(body);
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const handOff = { source: 'other-q#inc', messageId: 9, horizon: 4 };
    await queue.enqueue(message(), undefined, handOff);
    const command = port.calls[0]?.command;
    expect(command?.type === 'enqueue' ? [command.handOff, command.publishId] : undefined).toEqual([
      handOff,
      undefined,
    ]);
  });

  it('`get` is not retried after a lost or timed-out answer: it fails with a channel error', async () => {
    for (const failure of [lost('id-b'), new QueueLinkTimeoutError('id-b', 5_000)]) {
      const port = new FakePort();
      port.respond = () => {
        throw failure;
      };
      const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
      const error = await queue.get('conn/1', false).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelError);
      expect((error as ChannelError).code).toBe(Code.INTERNAL_ERROR);
      expect(port.calls).toHaveLength(1);
      expect(port.calls[0]?.command).toEqual({ type: 'get', owner: 'conn/1', noAck: false });
    }
  });

  it('`get` does follow a NOT_LEADER hint (the refused get took nothing) and returns the message', async () => {
    const port = new FakePort();
    const body = storedMessage(4, 'rk-got');
    port.respond = (call) => {
      if (call.peer === 'id-b') throw notLeader('id-b', 'id-c');
      return encodeCommandAnswer(
        { type: 'got', id: 7, redelivered: true, deliveryCount: 2, messageCount: 5 },
        body,
      );
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const got = await queue.get('conn/1', true);
    expect(port.peers()).toEqual(['id-b', 'id-c']);
    expect(got).toMatchObject({ id: 7, redelivered: true, deliveryCount: 2, messageCount: 5 });
    expect(got?.message.routingKey).toBe('rk-got');
    expect(got?.message.body.byteLength).toBe(4);
  });

  it('`get` on an empty queue returns undefined', async () => {
    const port = new FakePort();
    port.respond = () => encodeCommandAnswer({ type: 'empty' }, undefined);
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(await queue.get('conn/1', false)).toBeUndefined();
  });

  it('other commands are retried after a lost answer (settle, cancel, consume)', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    let lose = true;
    port.respond = (call, body) => {
      const answer = leader.apply(body);
      if (lose) {
        lose = false;
        throw lost(call.peer);
      }
      return answer;
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(await queue.consume('conn/1', 'ctag', 10, false, false)).toEqual({ type: 'ok' });
    expect(port.calls.map((c) => c.command?.type)).toEqual(['consume', 'consume']);
    expect(leader.harness.machine.counts().consumers).toBe(1);
  });
});

describe('ClusterQueue: the publish horizon', () => {
  /** A leader whose answers the test releases one by one. */
  function heldAnswers(port: FakePort): Map<number, () => void> {
    const release = new Map<number, () => void>();
    port.respond = (call) =>
      new Promise<Uint8Array>((resolve) => {
        const id = call.command?.type === 'enqueue' ? call.command.publishId?.messageId : undefined;
        if (id === undefined) throw new Error('not a publish');
        release.set(id, () => resolve(encodeCommandAnswer({ type: 'ok' }, undefined)));
      });
    return release;
  }

  async function settle(): Promise<void> {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  }

  it('is the lowest publish id still in flight to the queue', async () => {
    const port = new FakePort();
    const release = heldAnswers(port);
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const replies: Promise<unknown>[] = [];
    const publish = async (): Promise<HandOffId> => {
      replies.push(queue.enqueue(message(), undefined));
      await settle();
      const id = port.publishIds().at(-1);
      if (id === undefined) throw new Error('no publish id');
      return id;
    };
    const p1 = await publish();
    expect(p1.horizon).toBe(p1.messageId);
    const p2 = await publish();
    const p3 = await publish();
    expect([p2.messageId, p3.messageId]).toEqual([p1.messageId + 1, p1.messageId + 2]);
    expect([p2.horizon, p3.horizon]).toEqual([p1.messageId, p1.messageId]);

    // Answered out of order: the horizon stays at the oldest unanswered.
    release.get(p2.messageId)?.();
    await replies[1];
    expect((await publish()).horizon).toBe(p1.messageId); // p4
    release.get(p1.messageId)?.();
    await replies[0];
    const p5 = await publish();
    expect(p5.horizon).toBe(p3.messageId);
    release.get(p3.messageId)?.();
    release.get(p3.messageId + 1)?.();
    await Promise.all(replies.slice(2, 4));
    expect((await publish()).horizon).toBe(p5.messageId); // p6
    for (const resolve of release.values()) resolve();
    await Promise.all(replies);
    // Nothing in flight: the next publish is its own horizon.
    const p7 = await publish();
    expect(p7.horizon).toBe(p7.messageId);
    release.get(p7.messageId)?.();
    await Promise.all(replies);
  });

  it('a publish that failed leaves the in-flight set too', async () => {
    const port = new FakePort();
    const answers: (() => Uint8Array)[] = [
      () => {
        throw new QueueLinkRemoteError('406', 'PRECONDITION_FAILED - nope', 'id-b');
      },
      () => encodeCommandAnswer({ type: 'ok' }, undefined),
    ];
    port.respond = () => (answers.shift() as () => Uint8Array)();
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    await expect(queue.enqueue(message(), undefined)).rejects.toMatchObject({ code: 406 });
    await queue.enqueue(message(), undefined);
    const [, second] = port.publishIds();
    expect(second?.horizon).toBe(second?.messageId);
  });

  it('is kept per queue: another queue’s publishes in flight do not hold it back', async () => {
    const port = new FakePort();
    const answers: (() => void)[] = [];
    port.respond = () =>
      new Promise<Uint8Array>((resolve) => {
        answers.push(() => resolve(encodeCommandAnswer({ type: 'ok' }, undefined)));
      });
    const q1 = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const q2 = new ClusterQueue(record([SELF, 'id-b'], { name: 'q2' }), false, port);
    const r1 = q1.enqueue(message(), undefined);
    await settle();
    const r2 = q2.enqueue(message(), undefined);
    await settle();
    const [a, b] = port.publishIds();
    // Each handle numbers its own publishes from 1, without gaps (the queue's order check needs it).
    expect([a?.messageId, b?.messageId]).toEqual([1, 1]);
    expect(a?.source).not.toBe(b?.source);
    expect(b?.horizon).toBe(b?.messageId);
    for (const answer of answers) answer();
    await Promise.all([r1, r2]);
  });

  it('is kept per handle: each handle of the node is a dedupe source of its own', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (_call, body) => leader.apply(body);
    const older = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const newer = new ClusterQueue(record([SELF, 'id-b']), false, port);
    await older.enqueue(message(), undefined);
    await newer.enqueue(message(), undefined);
    const [a, b] = port.publishIds();
    expect(a?.source).not.toBe(b?.source);
    expect(leader.ready).toBe(2);
  });
});

describe('ClusterQueue: publish order through retries', () => {
  it('a publish that reached the leader before an earlier one is refused (outOfOrder), sent again after it, and lands second', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    // Publish 1's first attempt is lost on the way (unknown outcome) only after publish 2 has
    // already been taken: without the order check, the retry of 1 would land behind 2.
    let loseFirst: (() => void) | undefined;
    port.respond = (call, body) => {
      const id = call.command?.type === 'enqueue' ? call.command.publishId?.messageId : undefined;
      if (id === 1 && loseFirst === undefined) {
        return new Promise<Uint8Array>((_, reject) => {
          loseFirst = () => reject(lost(call.peer));
        });
      }
      const command = queueCommandCodec.decode(body);
      const answer = leader.apply(body);
      if (command.type === 'enqueue' && decodeCommandAnswer(answer).reply.type === 'ok') {
        taken.push(command.message.routingKey);
      }
      return answer;
    };
    const taken: string[] = [];
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const first = queue.enqueue(storedMessage(3, 'first'), undefined);
    const second = queue.enqueue(storedMessage(3, 'second'), undefined);
    await vi.waitFor(() => expect(port.calls.length).toBeGreaterThanOrEqual(2));
    // 2 reached the leader first and was refused: nothing is queued yet.
    expect(leader.ready).toBe(0);
    loseFirst?.();
    await expect(first).resolves.toEqual({ type: 'ok' });
    await expect(second).resolves.toEqual({ type: 'ok' });
    expect(leader.ready).toBe(2);
    // Taken in publish order, so delivered in it.
    expect(taken).toEqual(['first', 'second']);
  });
});

describe('ClusterQueue: the ordered_publishes feature flag', () => {
  it('marks publishes ordered only while the flag is enabled (an older replica cannot decode them)', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    port.respond = (_call, body) => leader.apply(body);
    let enabled = false;
    port.orderedPublishes = () => enabled;
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    await queue.enqueue(message(), undefined);
    enabled = true;
    await queue.enqueue(message(), undefined);
    const ordered = port.calls.map((c) => (c.command?.type === 'enqueue' ? c.command.ordered : undefined));
    expect(ordered).toEqual([undefined, true]);
    expect(leader.ready).toBe(2);
  });
});

describe('ClusterQueue: the binary_queue_answers feature flag', () => {
  it('sends op 8 and reads binary answers while the flag is enabled, op 1 and JSON while not', async () => {
    const port = new FakePort();
    const leader = new MachineHarness({
      deadLetterExchange: undefined,
      maxLength: 1,
      overflow: 'reject-publish',
    });
    port.respond = (call, body) => {
      const result = leader.apply(queueCommandCodec.decode(body));
      // The actor attaches a got's body from its body store; the machine alone does not.
      const got = result.reply.type === 'got' ? message() : undefined;
      return call.op === QueueOp.commandBinary
        ? encodeBinaryAnswer(result.reply, got)
        : encodeCommandAnswer(result.reply, got);
    };
    let enabled = true;
    port.binaryAnswers = () => enabled;
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    // The queue holds one message: the next is refused, and the refusal's reason comes through.
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'rejected', reason: 'maxlen' });
    const got = await queue.get('conn/1', true);
    expect(got).toMatchObject({ redelivered: false, messageCount: 0 });
    expect(got?.message.body.byteLength).toBe(message().body.byteLength);
    enabled = false;
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(await queue.get('conn/1', true)).toMatchObject({ messageCount: 0 });
    expect(port.calls.map((c) => c.op)).toEqual([8, 8, 8, 1, 1]);
  });

  it('a binary answer that does not decode fails the command, not the node', async () => {
    const port = new FakePort();
    port.binaryAnswers = () => true;
    port.respond = () => new Uint8Array([200]);
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    await expect(queue.get('conn/1', true)).rejects.toThrow(/unknown tag 200/);
  });
});

describe('ClusterQueue: errors answered by the leader', () => {
  it('an AMQP reply code becomes a ChannelError with that code, not retried', async () => {
    const port = new FakePort();
    port.respond = (call) => {
      throw new QueueLinkRemoteError(
        '405',
        "RESOURCE_LOCKED - cannot obtain exclusive access to queue 'q'",
        call.peer,
      );
    };
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const error = await queue.consume('conn/1', 'ctag', 0, false, true).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelError);
    expect(error).toMatchObject({
      code: 405,
      message: "RESOURCE_LOCKED - cannot obtain exclusive access to queue 'q'",
    });
    expect(port.calls).toHaveLength(1);
  });

  it('any other error code becomes a 541 channel error, not retried', async () => {
    const port = new FakePort();
    port.respond = (call) => {
      throw new QueueLinkRemoteError('INTERNAL', 'internal error', call.peer);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const error = await queue.settle('conn/1', [1]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelError);
    expect((error as ChannelError).code).toBe(Code.INTERNAL_ERROR);
    expect((error as ChannelError).message).toContain('INTERNAL');
    expect(port.calls).toHaveLength(1);
  });

  it('an unexpected error from the port is passed through unchanged', async () => {
    const port = new FakePort();
    const oops = new TypeError('oops');
    port.respond = () => {
      throw oops;
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    await expect(queue.touch()).rejects.toBe(oops);
  });
});

describe('ClusterQueue: the local replica', () => {
  it('runs commands on the local replica when it leads, with the publish id, without any call', async () => {
    const port = new FakePort();
    const log = new InMemoryLog<QueueCommand, QueueApplyResult>(GROUP);
    const proposed: QueueCommand[] = [];
    const propose = log.propose.bind(log);
    log.propose = (command: QueueCommand) => {
      proposed.push(command);
      return propose(command);
    };
    const { actor } = makeActor(log);
    await actor.open();
    port.local = actor;
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(await queue.enqueue(storedMessage(6, 'local-rk'), undefined)).toEqual({ type: 'ok' });
    const enqueue = proposed.find((c) => c.type === 'enqueue');
    expect(enqueue?.type === 'enqueue' ? enqueue.publishId?.source : undefined).toMatch(/^p\.this-run\./);
    expect(queue.counts().ready).toBe(1);
    expect(await queue.fetchCounts()).toMatchObject({ ready: 1 });
    const got = await queue.get('conn/1', true);
    expect(got?.message.routingKey).toBe('local-rk');
    expect(got?.message.body.byteLength).toBe(6);
    expect(port.calls).toEqual([]);
  });

  it('a local leader that loses the leadership mid-command forwards it to the new leader', async () => {
    const port = new FakePort();
    const leader = new RemoteLeader();
    // The replica steps down as the command is proposed; it has not heard from the new leader yet.
    const replica = {
      isLeader: true,
      leaderId: SELF as string | undefined,
      run(): Promise<never> {
        replica.isLeader = false;
        replica.leaderId = undefined;
        return Promise.reject(new NotLeaderError(GROUP, 'id-c'));
      },
      counts: () => ({ ready: 0 }),
    };
    port.local = replica as unknown as QueueActor;
    port.respond = (_call, body) => leader.apply(body);
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    expect(await queue.enqueue(message(), undefined)).toEqual({ type: 'ok' });
    expect(port.peers()).toEqual(['id-c']);
  });

  /**
   * A replica here that has just won an election: a peer that held the command until the election
   * ended answers NOT_LEADER naming this node (cluster-queues.ts, LEADERLESS_HOLD_MS).
   */
  function electedHere(firstLost: boolean) {
    const ran: QueueCommand[] = [];
    const replica = {
      groupId: GROUP,
      isLeader: false,
      leaderId: undefined as string | undefined,
      run(command: QueueCommand): Promise<QueueApplyResult> {
        ran.push(command);
        const reply = command.type === 'get' ? { type: 'empty' } : { type: 'purged', count: 0 };
        return Promise.resolve({ reply } as unknown as QueueApplyResult);
      },
    };
    const port = new FakePort();
    port.local = replica as unknown as QueueActor;
    port.respond = (call) => {
      // The first replica asked went down with the old leader; the next one held the command
      // until the election ended.
      if (firstLost && call.peer === 'id-b') throw lost(call.peer);
      replica.isLeader = true;
      replica.leaderId = SELF;
      throw notLeader(call.peer, SELF);
    };
    return { port, ran };
  }

  it('a NOT_LEADER naming this node, whose replica has just won, runs the command here at once (no back-off pause)', async () => {
    vi.useFakeTimers();
    const { port, ran } = electedHere(true);
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    let done = false;
    void queue.purge().then(() => {
      done = true;
    });
    // Microtasks only: no time passes, so a pause of any length before the local run would show.
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    expect(port.peers()).toEqual(['id-b', 'id-c']);
    expect(ran.map((c) => c.type)).toEqual(['purge']);
  });

  it('the same for a command that is not retried (get): no pause before it runs here', async () => {
    vi.useFakeTimers();
    const { port, ran } = electedHere(false);
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    let done = false;
    void queue.get('conn/1', true).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toBe(true);
    expect(ran.map((c) => c.type)).toEqual(['get']);
  });

  it('counts are the local replica’s, or zero without one; fetchCounts asks the leader', async () => {
    const port = new FakePort();
    const counts = { ready: 4, unacked: 1, consumers: 2, deadLetterPending: 0 } as QueueCounts;
    port.respond = (call) => {
      expect(call.op).toBe(QueueOp.counts);
      return encodeCounts(counts);
    };
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    expect(queue.counts()).toMatchObject({ ready: 0, unacked: 0, consumers: 0 });
    expect(await queue.fetchCounts()).toEqual(counts);
    expect(port.calls).toHaveLength(1);
    expect(port.calls[0]?.command).toBeUndefined();
  });
});

describe('ClusterQueue: a publisher’s order through retries', () => {
  /** A leader behind a link that loses (or delays, then loses) what is sent while it is down. */
  function flakyLeader(port: FakePort) {
    const state = { down: true, slowId: -1, landed: [] as number[] };
    port.respond = async (call) => {
      const command = call.command;
      const n = command?.type === 'enqueue' ? Number(Buffer.from(command.message.body).toString()) : -1;
      if (state.down) {
        // A call that times out late rather than failing with the others.
        if (n === state.slowId) await new Promise((resolve) => setTimeout(resolve, 30));
        throw lost(call.peer);
      }
      if (n >= 0) state.landed.push(n);
      return encodeCommandAnswer({ type: 'ok' }, undefined);
    };
    return state;
  }
  const publish = (queue: ClusterQueue, n: number): Promise<unknown> =>
    queue.enqueue({ ...message(), body: Buffer.from(String(n)) }, undefined);

  it('publishes made while earlier ones wait to be sent again land after them, in order', async () => {
    const port = new FakePort();
    const leader = flakyLeader(port);
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const early = [0, 1, 2].map((n) => publish(queue, n));
    await new Promise((resolve) => setTimeout(resolve, 5)); // their stream broke meanwhile
    const late = [3, 4].map((n) => publish(queue, n));
    leader.down = false;
    await Promise.all([...early, ...late]);
    expect(leader.landed).toEqual([0, 1, 2, 3, 4]);
  });

  it('an earlier publish still in flight when the trouble starts keeps its place', async () => {
    const port = new FakePort();
    const leader = flakyLeader(port);
    leader.slowId = 1; // 0 fails at once, 1 only later
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const early = [0, 1].map((n) => publish(queue, n));
    await new Promise((resolve) => setTimeout(resolve, 5));
    leader.down = false; // the link is back before 1's failure is known
    const late = [2, 3].map((n) => publish(queue, n));
    await Promise.all([...early, ...late]);
    expect(leader.landed).toEqual([0, 1, 2, 3]);
  });
});

describe('ClusterQueue: order when the leader moves under commands in flight', () => {
  it('a publish that would go to a new leader waits for those still in flight to the old one', async () => {
    const port = new FakePort();
    const landed: number[] = [];
    // The old leader (id-b) hangs, then its calls time out; the new one (id-c) answers at once.
    port.respond = async (call) => {
      const command = call.command;
      const n = command?.type === 'enqueue' ? Number(Buffer.from(command.message.body).toString()) : -1;
      if (call.peer === 'id-b') {
        await new Promise((resolve) => setTimeout(resolve, 40));
        throw new QueueLinkTimeoutError('id-b', 40);
      }
      if (n >= 0) landed.push(n);
      return encodeCommandAnswer({ type: 'ok' }, undefined);
    };
    const local = { isLeader: false, leaderId: 'id-b' } as { isLeader: boolean; leaderId: string };
    port.local = local as unknown as QueueActor;
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const publish = (n: number): Promise<unknown> =>
      queue.enqueue({ ...message(), body: Buffer.from(String(n)) }, undefined);
    const early = [publish(0), publish(1)];
    await new Promise((resolve) => setTimeout(resolve, 5));
    local.leaderId = 'id-c'; // this replica learns of the new leader before the calls time out
    const late = [publish(2), publish(3)];
    await Promise.all([...early, ...late]);
    expect(landed).toEqual([0, 1, 2, 3]);
  });
});

describe('ClusterQueue: order when the leader refuses one command and takes the next', () => {
  it('publishes in flight behind one the leader refused (nothing appended) are refused too, and land after it', async () => {
    // Chaos seeds 323 and 407: a leader refused a run of a channel's pipelined publishes with nothing
    // appended (its group over the uncommitted bound while a membership change held commits back),
    // then took the next one, already on the link, once room came back; the refused ones, sent
    // again, landed after it (p-work2-a:3945 before 3937-3944).
    const port = new FakePort();
    const log = new InMemoryLog<QueueCommand, QueueApplyResult>(GROUP);
    const landed: number[] = [];
    let refuse = new Set<number>([1]);
    const propose = log.propose.bind(log);
    const { actor } = makeActor(log);
    log.propose = (command: QueueCommand) => {
      const n = command.type === 'enqueue' ? Number(Buffer.from(command.message.body).toString()) : -1;
      if (refuse.has(n)) {
        refuse = new Set(); // room again for whatever comes next
        return Promise.reject(new GroupOverloadedError(GROUP));
      }
      if (n >= 0) landed.push(n);
      return propose(command);
    };
    await actor.open();
    // The leader behind the link, as ClusterQueues serves a forwarded command: each request in
    // its own turn, in the order sent.
    let chain: Promise<unknown> = Promise.resolve();
    port.respond = (_call, body) => {
      const answer = chain.then(async () => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        try {
          const result = await actor.run(queueCommandCodec.decode(body));
          return encodeCommandAnswer(result.reply, undefined);
        } catch (error) {
          if (error instanceof GroupOverloadedError)
            throw new QueueLinkRemoteError('GROUP_OVERLOADED', error.message, 'id-b');
          throw error;
        }
      });
      chain = answer.catch(() => undefined);
      return answer;
    };
    const queue = new ClusterQueue(record(['id-b', SELF]), false, port);
    const publishes = [0, 1, 2, 3, 4].map((n) =>
      queue.enqueue({ ...message(), body: Buffer.from(String(n)) }, undefined),
    );
    await Promise.all(publishes);
    expect(landed).toEqual([0, 1, 2, 3, 4]);
  });
});

describe('ClusterQueue: order when the leader here lost its leadership and won it again', () => {
  it('a publish waits for those still pending from the earlier leadership, which may fail after it commits', async () => {
    // Chaos seeds 323 and 407: publishes proposed here were pending when this replica lost the
    // leadership across a membership change and won it back; the next publish went straight to it
    // (the same node) and committed, and only then were the earlier ones found overwritten and
    // refused: sent again, they landed after it.
    const port = new FakePort();
    const log = new HeldLog();
    const { actor } = makeActor(log);
    await actor.open();
    port.local = actor;
    const queue = new ClusterQueue(record([SELF, 'id-b']), false, port);
    const publish = (n: number): Promise<unknown> =>
      queue.enqueue({ ...message(), body: Buffer.from(String(n)) }, undefined);
    const done = [publish(0)];
    await log.settle();
    done.push(publish(1), publish(2));
    await new Promise((resolve) => setTimeout(resolve, 1));
    log.setRole('follower');
    log.setRole('leader'); // a new leadership; 1 and 2 are still pending from the earlier one
    await new Promise((resolve) => setTimeout(resolve, 1));
    done.push(publish(3));
    await new Promise((resolve) => setTimeout(resolve, 1));
    await log.settle((n) => n === 3); // 3 commits first, if it was proposed
    log.refuse((n) => n === 1 || n === 2); // their entries were overwritten: refused
    for (;;) {
      await log.settle();
      const outcome = await Promise.race([
        Promise.all(done).then(() => 'done'),
        new Promise((resolve) => setTimeout(resolve, 5, 'waiting')),
      ]);
      if (outcome === 'done') break;
    }
    expect(log.landed).toEqual([0, 1, 2, 3]);
  });
});

/** A leader's log whose proposals stay pending until the test commits or refuses them. */
class HeldLog extends ScriptedLog {
  readonly landed: number[] = [];
  readonly #held: {
    command: QueueCommand;
    resolve: (r: QueueApplyResult) => void;
    reject: (e: unknown) => void;
  }[] = [];
  constructor() {
    super('leader');
  }
  override propose(command: QueueCommand): Promise<QueueApplyResult> {
    if (this.role !== 'leader') return Promise.reject(new NotLeaderError(GROUP, undefined));
    // Only publishes are held; the actor's own commands (its first config) commit at once.
    if (command.type !== 'enqueue') return Promise.resolve().then(() => this.append(command));
    return new Promise((resolve, reject) => this.#held.push({ command, resolve, reject }));
  }
  /** Commit the held proposals `which` picks (all by default), in the order proposed. */
  async settle(which: (n: number) => boolean = () => true): Promise<void> {
    for (const held of [...this.#held]) {
      const n = numberOf(held.command);
      if (!which(n)) continue;
      this.#held.splice(this.#held.indexOf(held), 1);
      if (n >= 0) this.landed.push(n);
      held.resolve(this.append(held.command));
    }
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  refuse(which: (n: number) => boolean): void {
    for (const held of [...this.#held]) {
      if (!which(numberOf(held.command))) continue;
      this.#held.splice(this.#held.indexOf(held), 1);
      held.reject(new NotLeaderError(GROUP, undefined));
    }
  }
}

function numberOf(command: QueueCommand): number {
  return command.type === 'enqueue' ? Number(Buffer.from(command.message.body).toString()) : -1;
}

describe('ClusterQueue: a leader here cut off from its quorum', () => {
  /** A replica here that led and lost its quorum: what it proposes waits for the partition to heal. */
  function deposedLeader() {
    const replica = {
      isLeader: true,
      leaderId: SELF as string | undefined,
      proposed: 0,
      run(): Promise<never> {
        replica.proposed++;
        return new Promise<never>(() => {});
      },
      counts: () => ({ ready: 0, unacked: 0, consumers: 0, deadLetterPending: 0 }),
    };
    return replica;
  }

  /** Every outcome, as it comes. */
  function track(promise: Promise<unknown>): { outcome: unknown; settled: boolean } {
    const state = { outcome: undefined as unknown, settled: false };
    promise.then(
      (value) => Object.assign(state, { outcome: value, settled: true }),
      (error: unknown) => Object.assign(state, { outcome: error, settled: true }),
    );
    return state;
  }

  it('a command proposed here, and those queued behind it once it stepped down, fail at the deadline', async () => {
    vi.useFakeTimers();
    const port = new FakePort();
    port.maxCalls = 100_000;
    // The other replicas are across the partition.
    port.respond = (call) => {
      throw lost(call.peer);
    };
    const replica = deposedLeader();
    port.local = replica as unknown as QueueActor;
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const publish = track(queue.enqueue(message(), undefined));
    expect(replica.proposed).toBe(1);
    // Check-quorum steps it down; its proposal stays pending (its outcome is unknown until the
    // partition heals). Commands after it queue behind it, to go to another replica.
    replica.isLeader = false;
    replica.leaderId = undefined;
    const ack = track(queue.settle('conn/1', [1]));
    const purge = track(queue.purge());
    await vi.advanceTimersByTimeAsync(3 * FORWARD_DEADLINE_MS);
    for (const outcome of [publish, ack, purge]) {
      expect(outcome.settled).toBe(true);
      expect(outcome.outcome).toBeInstanceOf(QueueUnavailableError);
    }
  });

  it('a leader here that does not know it lost its quorum: the command fails at the deadline', async () => {
    vi.useFakeTimers();
    const port = new FakePort();
    const replica = deposedLeader();
    port.local = replica as unknown as QueueActor;
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const publish = track(queue.enqueue(message(), undefined));
    const consume = track(queue.consume('conn/1', 'ctag', 10, false, false));
    await vi.advanceTimersByTimeAsync(3 * FORWARD_DEADLINE_MS);
    for (const outcome of [publish, consume]) {
      expect(outcome.settled).toBe(true);
      expect(outcome.outcome).toBeInstanceOf(QueueUnavailableError);
    }
    // Sent again meanwhile (same publish id: safe), not once per millisecond.
    expect(replica.proposed).toBeGreaterThan(2);
    expect(replica.proposed).toBeLessThan(40);
    expect(port.calls).toEqual([]);
  });

  it('`get` on it fails at the deadline (not retried: a repeated get could take a second message)', async () => {
    vi.useFakeTimers();
    const port = new FakePort();
    const replica = deposedLeader();
    port.local = replica as unknown as QueueActor;
    const queue = new ClusterQueue(record([SELF, 'id-b', 'id-c']), false, port);
    const got = track(queue.get('conn/1', false));
    await vi.advanceTimersByTimeAsync(3 * FORWARD_DEADLINE_MS);
    expect(got.settled).toBe(true);
    expect(got.outcome).toBeInstanceOf(ChannelError);
    expect(replica.proposed).toBe(1);
  });
});
