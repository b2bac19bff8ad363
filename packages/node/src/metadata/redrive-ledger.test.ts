import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import { MetadataMachine } from './metadata-machine.ts';
import { MAX_REDRIVE_RECORDS } from './redrive-ledger.ts';
import type { RedriveCommand, RedriveProgress } from './redrive-types.ts';
import { EMPTY_REDRIVE_PROGRESS } from './redrive-types.ts';
import type { MetadataCommand, MetadataReply } from './types.ts';

type Start = Extract<RedriveCommand, { type: 'startRedrive' }>;

let index = 0;
function apply(m: MetadataMachine, command: MetadataCommand, ts = 1000): MetadataReply {
  index++;
  return m.apply(command, { index, term: 1, ts });
}

function start(id: string, overrides: Partial<Start> = {}): Start {
  return {
    type: 'startRedrive',
    id,
    user: 'guest',
    vhost: '/',
    queue: 'dlq',
    groupId: 'g1',
    owner: 'n1',
    dryRun: false,
    spec: { filter: { reason: 'rejected' }, target: { kind: 'source' }, rate: 10, maxMessages: null },
    ...overrides,
  };
}

function progress(overrides: Partial<RedriveProgress> = {}): RedriveProgress {
  return { ...EMPTY_REDRIVE_PROGRESS, ...overrides };
}

function expectError(reply: MetadataReply, code: number, text: RegExp): void {
  expect(reply.type).toBe('error');
  if (reply.type === 'error') {
    expect(reply.code).toBe(code);
    expect(reply.text).toMatch(text);
  }
}

describe('metadata redrive records', () => {
  it('starts a record stamped with the entry time, running, owned by the proposer', () => {
    const m = new MetadataMachine();
    expect(apply(m, start('r1'), 5000)).toMatchObject({ type: 'ok', created: true });
    expect(m.redrive('r1')).toMatchObject({
      id: 'r1',
      user: 'guest',
      vhost: '/',
      queue: 'dlq',
      state: 'running',
      owner: 'n1',
      createdAt: 5000,
      finishedAt: null,
      cancelRequested: false,
      filter: { reason: 'rejected' },
      target: { kind: 'source' },
      rate: 10,
      maxMessages: null,
      progress: EMPTY_REDRIVE_PROGRESS,
    });
    expectError(apply(m, start('r1')), ReplyCode.PRECONDITION_FAILED, /exists already/);
  });

  it('refuses a malformed start with a reason, on every replica alike', () => {
    const m = new MetadataMachine();
    const badTarget = start('r', { spec: { ...start('r').spec, target: { kind: 'elsewhere' } as never } });
    expectError(apply(m, badTarget), ReplyCode.PRECONDITION_FAILED, /target/);
    const badRate = start('r', { spec: { ...start('r').spec, rate: -1 } });
    expectError(apply(m, badRate), ReplyCode.PRECONDITION_FAILED, /rate/);
    const badMax = start('r', { spec: { ...start('r').spec, maxMessages: 1.5 } });
    expectError(apply(m, badMax), ReplyCode.PRECONDITION_FAILED, /max_messages/);
    expectError(apply(m, start('')), ReplyCode.PRECONDITION_FAILED, /id/);
    // Wrong field types are caught by the shape check before the ledger sees them.
    const wrongType = { ...start('r'), dryRun: 'yes' } as unknown as MetadataCommand;
    expectError(apply(m, wrongType), ReplyCode.COMMAND_INVALID, /dryRun/);
    expect(m.redriveRecords()).toEqual([]);
  });

  it('runs one real redrive at a time per queue incarnation; dry runs are not limited', () => {
    const m = new MetadataMachine();
    expect(apply(m, start('r1')).type).toBe('ok');
    expectError(
      apply(m, start('r2')),
      ReplyCode.PRECONDITION_FAILED,
      /redrive 'r1' of queue 'dlq'.* is running/,
    );
    expect(apply(m, start('d1', { dryRun: true })).type).toBe('ok');
    expect(apply(m, start('other', { groupId: 'g2' })).type).toBe('ok');
    apply(m, { type: 'updateRedrive', id: 'r1', owner: 'n1', state: 'cancelled', progress: progress() });
    expect(apply(m, start('r2')).type).toBe('ok');
  });

  it('takes progress only from its owner and only while running; an end state is stamped', () => {
    const m = new MetadataMachine();
    apply(m, start('r1'));
    const p = progress({
      total: 5,
      bound: 40,
      cursor: 12,
      moved: 3,
      failed: 1,
      inflight: [12],
      targets: [{ exchange: '', routingKey: 'work', count: 3 }],
      failures: [{ reason: 'unroutable', count: 1 }],
    });
    const update: MetadataCommand = {
      type: 'updateRedrive',
      id: 'r1',
      owner: 'n1',
      state: 'running',
      progress: p,
    };
    expect(apply(m, update, 2000).type).toBe('ok');
    // Absolute counts: the same update again changes nothing.
    expect(apply(m, update, 2000).type).toBe('ok');
    expect(m.redrive('r1')?.progress).toEqual(p);
    expect(m.redrive('r1')?.updatedAt).toBe(2000);
    expectError(
      apply(m, { ...update, owner: 'n2' }),
      ReplyCode.PRECONDITION_FAILED,
      /run by node 'n1', not 'n2'/,
    );
    expect(
      apply(m, { ...update, state: 'done', progress: progress({ moved: 4, failed: 1 }) }, 3000).type,
    ).toBe('ok');
    expect(m.redrive('r1')).toMatchObject({ state: 'done', finishedAt: 3000 });
    expectError(apply(m, update), ReplyCode.PRECONDITION_FAILED, /has ended \(done\)/);
    expectError(apply(m, { ...update, id: 'nope' }), ReplyCode.NOT_FOUND, /no redrive 'nope'/);
  });

  it('refuses progress that is malformed or past its bounds', () => {
    const m = new MetadataMachine();
    apply(m, start('r1'));
    const base = { type: 'updateRedrive', id: 'r1', owner: 'n1', state: 'running' } as const;
    expectError(
      apply(m, { ...base, progress: progress({ moved: -1 }) }),
      ReplyCode.PRECONDITION_FAILED,
      /moved/,
    );
    const many = Array.from({ length: 2000 }, (_, i) => i);
    expectError(
      apply(m, { ...base, progress: progress({ inflight: many }) }),
      ReplyCode.PRECONDITION_FAILED,
      /inflight/,
    );
    expectError(
      apply(m, { ...base, state: 'paused' as never, progress: progress() }),
      ReplyCode.PRECONDITION_FAILED,
      /state/,
    );
    expect(m.redrive('r1')?.progress).toEqual(EMPTY_REDRIVE_PROGRESS);
  });

  it('lets one node take over from a gone owner: compare-and-set on the owner', () => {
    const m = new MetadataMachine();
    apply(m, start('r1'));
    expect(apply(m, { type: 'claimRedrive', id: 'r1', owner: 'n2', previousOwner: 'n1' }).type).toBe('ok');
    // A second node claiming from the same previous owner loses.
    expectError(
      apply(m, { type: 'claimRedrive', id: 'r1', owner: 'n3', previousOwner: 'n1' }),
      ReplyCode.PRECONDITION_FAILED,
      /run by node 'n2' now/,
    );
    expect(m.redrive('r1')).toMatchObject({ owner: 'n2', takeovers: 1 });
    // The old owner, back, can no longer write progress.
    expect(
      apply(m, { type: 'updateRedrive', id: 'r1', owner: 'n1', state: 'running', progress: progress() }).type,
    ).toBe('error');
  });

  it('marks a running redrive to be cancelled; an ended one stays as it is', () => {
    const m = new MetadataMachine();
    apply(m, start('r1'));
    expect(apply(m, { type: 'cancelRedrive', id: 'r1' })).toMatchObject({ type: 'ok', removed: true });
    expect(m.redrive('r1')).toMatchObject({ state: 'running', cancelRequested: true });
    apply(m, { type: 'updateRedrive', id: 'r1', owner: 'n1', state: 'cancelled', progress: progress() });
    expect(apply(m, { type: 'cancelRedrive', id: 'r1' })).toMatchObject({ type: 'ok', removed: false });
    expect(m.redrive('r1')?.state).toBe('cancelled');
    expectError(apply(m, { type: 'cancelRedrive', id: 'r9' }), ReplyCode.NOT_FOUND, /r9/);
  });

  it(`keeps at most ${MAX_REDRIVE_RECORDS} records, forgetting the oldest finished first`, () => {
    const m = new MetadataMachine();
    for (let i = 0; i < MAX_REDRIVE_RECORDS; i++) apply(m, start(`r${i}`, { groupId: `g${i}` }));
    // Every record runs: no room.
    expectError(
      apply(m, start('extra', { groupId: 'gx' })),
      ReplyCode.PRECONDITION_FAILED,
      /1000 redrives are running/,
    );
    apply(m, { type: 'updateRedrive', id: 'r7', owner: 'n1', state: 'done', progress: progress() });
    apply(m, { type: 'updateRedrive', id: 'r3', owner: 'n1', state: 'failed', progress: progress() });
    expect(apply(m, start('extra', { groupId: 'gx' })).type).toBe('ok');
    // r3 finished second, but was started first: the oldest finished record goes.
    expect(m.redrive('r3')).toBeUndefined();
    expect(m.redrive('r7')).toBeDefined();
    expect(m.redriveRecords()).toHaveLength(MAX_REDRIVE_RECORDS);
    expect(m.redriveRecords()[0]?.id).toBe('extra');
  });

  it('survives a snapshot and the log codec exactly', () => {
    const m = new MetadataMachine();
    apply(m, start('r1'));
    apply(
      m,
      start('r2', {
        dryRun: true,
        spec: {
          filter: {},
          target: { kind: 'exchange', exchange: '', routingKey: 'q' },
          rate: null,
          maxMessages: 5,
        },
      }),
    );
    const update: MetadataCommand = {
      type: 'updateRedrive',
      id: 'r2',
      owner: 'n1',
      state: 'done',
      progress: progress({
        total: 1,
        sample: [{ id: 4, exchange: '', routingKey: 'q', queues: ['q'], failure: null }],
      }),
      error: null,
    };
    const decoded = metadataCommandCodec.decode(metadataCommandCodec.encode(update));
    expect(decoded).toEqual(update);
    apply(m, decoded);
    const restored = new MetadataMachine();
    restored.restore(m.snapshot());
    expect(restored.redriveRecords()).toEqual(m.redriveRecords());
    expect(restored.snapshot()).toEqual(m.snapshot());
    // A snapshot written before redrives existed restores with none.
    const old = JSON.parse(new TextDecoder().decode(m.snapshot())) as Record<string, unknown>;
    delete old.redrives;
    const older = new MetadataMachine();
    older.restore(new TextEncoder().encode(JSON.stringify(old)));
    expect(older.redriveRecords()).toEqual([]);
  });
});
