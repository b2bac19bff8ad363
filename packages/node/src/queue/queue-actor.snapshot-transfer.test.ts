/**
 * Snapshot transfer of a queue: a follower catching up by snapshot gets the live bodies with the
 * metadata. Unit: the actor's transfer encode/install round trip. Group: a three-voter queue group
 * over the in-process hub, one follower cut off while the leader compacts.
 */
import type { EntryMeta, ReplicatedLog, StateMachine } from '@styx/raft';
import { InProcessHub, LogStore, MemoryLogStorage, RaftHost } from '@styx/raft';
import { afterEach, describe, expect, it } from 'vitest';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import { InMemoryBodyStore } from './body-store.ts';
import { QueueSnapshotError } from './errors.ts';
import { QueueActor } from './queue-actor.ts';
import { GROUP, OWNER, RecordingLogger, RecordingSinks, ScriptedLog } from './queue-actor-test-support.ts';
import { queueConfig } from './queue-test-harness.ts';
import { decodeTransferSnapshot, encodeTransferSnapshot } from './transfer-snapshot.ts';
import type { QueueApplyResult, QueueCommand, StoredMessage } from './types.ts';

type QueueMachineFace = StateMachine<QueueCommand, QueueApplyResult>;

/** Message n: its number in the body (`size` bytes) and in a header. */
function message(n: number, size = 64): StoredMessage {
  const body = Buffer.alloc(size, 0x2e);
  body.write(`message ${n}`);
  return {
    exchange: 'ex',
    routingKey: `rk-${n}`,
    properties: { headers: { entries: [{ key: 'n', value: { i32: n } }] } },
    body,
    bcc: n % 2 === 0 ? ['b'] : undefined,
  };
}

function expectSameMessage(actual: StoredMessage | undefined, expected: StoredMessage | undefined): void {
  expect(actual).toBeDefined();
  expect(expected).toBeDefined();
  const a = actual as StoredMessage;
  const e = expected as StoredMessage;
  expect(Buffer.from(a.body).equals(Buffer.from(e.body))).toBe(true);
  // Decoded properties may spell absent fields as undefined: compare as values.
  expect({ ...a, body: undefined }).toEqual({ ...e, body: undefined });
}

/** An actor on a scripted log, with the state machine the log drives captured. */
async function scriptedActor(
  role: 'leader' | 'follower',
  history: QueueCommand[] = [],
): Promise<{ actor: QueueActor; log: ScriptedLog; machine: QueueMachineFace; bodies: InMemoryBodyStore }> {
  const log = new ScriptedLog(role, history);
  let captured: QueueMachineFace | undefined;
  const open = log.open.bind(log);
  log.open = (machine) => {
    captured = machine;
    return open(machine);
  };
  const bodies = new InMemoryBodyStore();
  const actor = new QueueActor({
    vhost: 'vh',
    name: 'q',
    groupId: GROUP,
    log,
    bodyStore: bodies,
    config: queueConfig(),
    logger: new RecordingLogger(),
    sinks: new RecordingSinks(),
  });
  await actor.open();
  if (captured === undefined) throw new Error('log not opened');
  return { actor, log, machine: captured, bodies };
}

describe('transfer snapshot codec', () => {
  it('round-trips metadata and bodies, and refuses trailing or truncated bytes', () => {
    const metadata = new Uint8Array([9, 8, 7]);
    const bodies = [
      { id: 3, message: message(3) },
      { id: 300_000, message: message(4, 5000) },
    ];
    const bytes = encodeTransferSnapshot({ metadata, bodies });
    const decoded = decodeTransferSnapshot(bytes);
    expect([...decoded.metadata]).toStrictEqual([9, 8, 7]);
    expect(decoded.bodies.map((b) => b.id)).toStrictEqual([3, 300_000]);
    expectSameMessage(decoded.bodies[0]?.message, bodies[0]?.message);
    expectSameMessage(decoded.bodies[1]?.message, bodies[1]?.message);
    const longer = new Uint8Array(bytes.byteLength + 1);
    longer.set(bytes);
    expect(() => decodeTransferSnapshot(longer)).toThrow(QueueSnapshotError);
    expect(() => decodeTransferSnapshot(bytes.subarray(0, bytes.byteLength - 1))).toThrow(QueueSnapshotError);
    expect(() => decodeTransferSnapshot(new Uint8Array([2]))).toThrow(QueueSnapshotError);
  });
});

describe('QueueActor snapshot transfer', () => {
  it('sends the bodies of the messages still live up to the snapshot, and installs them', async () => {
    const leader = await scriptedActor('leader');
    // 1: setConfig; 2..7: six enqueues.
    for (let n = 2; n <= 7; n++) await leader.actor.enqueue(message(n), undefined);
    const snapshot = leader.machine.snapshot();
    const meta: EntryMeta = { index: 7, term: 1, ts: Date.now() };
    // After the snapshot: 8 takes message 2 (gone for good), 9 enqueues a message beyond it.
    const got = await leader.actor.get(OWNER, true);
    expect(got?.id).toBe(2);
    await leader.actor.enqueue(message(9), undefined);

    const transfer = leader.machine.transferSnapshot?.(snapshot, meta);
    expect(transfer).toBeDefined();
    const carried = decodeTransferSnapshot(transfer as Uint8Array);
    expect(carried.bodies.map((b) => b.id)).toStrictEqual([3, 4, 5, 6, 7]);
    expect([...carried.metadata]).toStrictEqual([...snapshot]);

    // A follower whose own state (and body) is stale: id 2 holds another message there.
    const follower = await scriptedActor('follower', [
      { type: 'setConfig', config: queueConfig() },
      { type: 'enqueue', size: 64, ttl: undefined, message: message(1002), handOff: undefined },
    ]);
    expect(follower.bodies.size(GROUP)).toBe(1);
    const metadata = follower.machine.installTransferSnapshot?.(transfer as Uint8Array, meta);
    expect([...(metadata as Uint8Array)]).toStrictEqual([...snapshot]);
    // The replaced state's body is gone; the transferred ones are stored.
    expect(follower.bodies.get(GROUP, 2)).toBeUndefined();
    for (let id = 3; id <= 7; id++) expectSameMessage(follower.bodies.get(GROUP, id), message(id));
    follower.machine.restore(metadata as Uint8Array, meta);
    expect(follower.actor.counts().ready).toBe(6);
    await leader.actor.close();
    await follower.actor.close();
  });
});

/** Poll until `check` holds (the group runs on real timers). */
async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 2));
}

describe('three-voter queue group: a follower catching up by snapshot', () => {
  const hosts: RaftHost[] = [];
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
  });

  it('gets every live message body with the metadata', async () => {
    const ids = ['n1', 'n2', 'n3'];
    const hub = new InProcessHub();
    const logStores = ids.map(() => new LogStore(new MemoryLogStorage()));
    const bodyStores = ids.map(() => new InMemoryBodyStore());
    for (const [i, id] of ids.entries()) {
      hosts.push(
        new RaftHost({
          nodeId: id,
          logStore: logStores[i] as LogStore,
          transport: hub.connect(id),
          tickMs: 10,
          // Small chunks: the transfer travels in many.
          raft: { electionTicks: id === 'n1' ? 10 : 50, snapshotChunkBytes: 1024 },
        }),
      );
    }
    const logs = ids.map((_, i) =>
      (hosts[i] as RaftHost).createLog<QueueCommand, QueueApplyResult>(GROUP, queueCommandCodec, {
        voters: ids,
        campaignOnOpen: i === 0,
      }),
    );
    const actors = ids.map(
      (_, i) =>
        new QueueActor({
          vhost: 'vh',
          name: 'q',
          groupId: GROUP,
          log: logs[i] as ReplicatedLog<QueueCommand, QueueApplyResult>,
          bodyStore: bodyStores[i] as InMemoryBodyStore,
          config: queueConfig(),
          logger: new RecordingLogger(),
          sinks: new RecordingSinks(),
        }),
    );
    await Promise.all([actors[1]?.open(), actors[2]?.open()]);
    await actors[0]?.open();
    const leaderLog = logs[0];
    const leader = actors[0] as QueueActor;
    await eventually(() => leaderLog?.role === 'leader');

    // n3 is cut off (batches to and from it are lost) while the leader works and compacts.
    hub.setFilter((from, to) => from !== 'n3' && to !== 'n3');
    for (let n = 1; n <= 20; n++) await leader.enqueue(message(n, 2000), undefined);
    for (let k = 0; k < 5; k++) expect(await leader.get(OWNER, true)).toBeDefined();
    await leaderLog?.compact();
    // After the snapshot: two more leave, three more arrive (replayed by n3 after the install).
    for (let k = 0; k < 2; k++) expect(await leader.get(OWNER, true)).toBeDefined();
    for (let n = 21; n <= 23; n++) await leader.enqueue(message(n, 2000), undefined);
    expect(leader.counts().ready).toBe(16);
    expect(bodyStores[2]?.size(GROUP)).toBe(0);

    hub.setFilter(undefined);
    const lagging = logs[2];
    await eventually(() => lagging?.appliedIndex === leaderLog?.appliedIndex);
    expect(actors[2]?.counts()).toStrictEqual(leader.counts());

    // n3 installed a snapshot (its log starts after the compaction point) ...
    const stored = logStores[2]?.snapshot(GROUP);
    expect(stored?.meta.index).toBeGreaterThan(0);
    // ... and stored it as metadata only (16 bodies of 2000 bytes travelled with it).
    expect(stored?.data.byteLength).toBeLessThan(2000);
    // Every live message's body is in n3's body store, and nothing else.
    const leaderBodies = bodyStores[0] as InMemoryBodyStore;
    const laggingBodies = bodyStores[2] as InMemoryBodyStore;
    expect(leaderBodies.size(GROUP)).toBe(16);
    expect(laggingBodies.size(GROUP)).toBe(16);
    for (let id = 1; id <= 40; id++) {
      const expected = leaderBodies.get(GROUP, id);
      if (expected === undefined) expect(laggingBodies.get(GROUP, id)).toBeUndefined();
      else expectSameMessage(laggingBodies.get(GROUP, id), expected);
    }
    for (const actor of actors) await actor.close();
  });
});
