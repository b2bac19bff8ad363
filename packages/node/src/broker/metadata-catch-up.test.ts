import { Writable } from 'node:stream';
import { BarrierTimeoutError } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../logging/logger.ts';
import type { ReadBarrier } from './metadata-catch-up.ts';
import { METADATA_READ_TIMEOUT_MS, MetadataCatchUp } from './metadata-catch-up.ts';

/**
 * The metadata group's read barrier as the catch-up sees it, answered by the test: each call is one
 * read-index request to the leader, settled when the test says the leader answered (or did not).
 */
class ScriptedBarrier implements ReadBarrier {
  readonly calls: { timeoutMs: number; resolve: () => void; reject: (e: Error) => void }[] = [];

  barrier(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => this.calls.push({ timeoutMs, resolve, reject }));
  }

  answer(i: number): void {
    this.calls[i]?.resolve();
  }
}

/** The JSON lines a logger wrote. */
function logLines(): { lines: Record<string, unknown>[]; destination: Writable } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, destination };
}

/** A catch-up of `kind` `name` in `vhost`, named so in a warning. */
const ask = (catchUp: MetadataCatchUp, known: boolean, kind: string, vhost: string, name: string) =>
  catchUp.catchUpUnless(known, () => `${kind} '${name}' in vhost '${vhost}'`);

/** Let every settled promise's continuations run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setUp(timeoutMs?: number) {
  const group = new ScriptedBarrier();
  const log = logLines();
  const catchUp = new MetadataCatchUp({
    group: () => group,
    logger: createLogger({ level: 'info', pretty: false, destination: log.destination }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  return { group, catchUp, lines: log.lines };
}

describe('MetadataCatchUp', () => {
  it('never waits for a known name, nor on a node without a metadata group', () => {
    const { group, catchUp } = setUp();
    expect(ask(catchUp, true, 'queue', '/', 'q')).toBeUndefined();
    const alone = new MetadataCatchUp({
      group: () => undefined,
      logger: createLogger({ level: 'silent', pretty: false }),
    });
    expect(ask(alone, false, 'queue', '/', 'q')).toBeUndefined();
    expect(group.calls).toHaveLength(0);
    expect(catchUp.rounds).toBe(0);
  });

  it('serves every miss of a burst with one read-index request, bounded by the timeout', async () => {
    const { group, catchUp } = setUp();
    const served: number[] = [];
    const waits = [0, 1, 2, 3, 4].map((i) =>
      (ask(catchUp, false, 'queue', '/', `q${i}`) as Promise<void>).then(() => served.push(i)),
    );
    // Asked at the end of the turn, for the whole turn's misses.
    expect(group.calls).toHaveLength(0);
    await settle();
    expect(group.calls).toHaveLength(1);
    expect(group.calls[0]?.timeoutMs).toBe(METADATA_READ_TIMEOUT_MS);
    expect(served).toEqual([]);
    group.answer(0);
    await Promise.all(waits);
    expect(served).toEqual([0, 1, 2, 3, 4]);
    expect(catchUp.rounds).toBe(1);
  });

  it('a miss while a request is in flight waits for the next one, which every later miss shares', async () => {
    const { group, catchUp } = setUp(250);
    const served: string[] = [];
    const first = ask(catchUp, false, 'exchange', '/', 'a') as Promise<void>;
    void first.then(() => served.push('a'));
    await settle();
    // The request in flight may have been answered from a commit index older than what these
    // callers saw acknowledged: they must not be served by it.
    const later = ['b', 'c', 'd'].map((name) =>
      (ask(catchUp, false, 'exchange', '/', name) as Promise<void>).then(() => served.push(name)),
    );
    expect(group.calls).toHaveLength(1);
    group.answer(0);
    await first;
    await settle();
    expect(served).toEqual(['a']);
    // One request for the three of them, sent once the first completed.
    expect(group.calls).toHaveLength(2);
    expect(group.calls[1]?.timeoutMs).toBe(250);
    group.answer(1);
    await Promise.all(later);
    expect(served).toEqual(['a', 'b', 'c', 'd']);
    expect(catchUp.rounds).toBe(2);
    // Nothing in flight any more: the next miss asks anew, at the end of its turn.
    void ask(catchUp, false, 'queue', '/', 'e');
    await settle();
    expect(group.calls).toHaveLength(3);
  });

  it('when the leader does not confirm in time, resolves all the same and logs which name it missed', async () => {
    const { group, catchUp, lines } = setUp(100);
    const waits = [
      ask(catchUp, false, 'queue', 'v1', 'orders'),
      ask(catchUp, false, 'exchange', 'v1', 'events'),
    ];
    await settle();
    expect(group.calls).toHaveLength(1);
    group.calls[0]?.reject(new BarrierTimeoutError('metadata', 100));
    await Promise.all(waits);
    const warnings = lines.filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual([
      expect.stringContaining("queue 'orders' in vhost 'v1': unknown on this node"),
      expect.stringContaining("exchange 'events' in vhost 'v1': unknown on this node"),
    ]);
    expect(warnings[0]?.timeoutMs).toBe(100);
    // A failed round leaves nothing behind: the next miss sends a new request.
    void ask(catchUp, false, 'queue', 'v1', 'orders');
    await settle();
    expect(group.calls).toHaveLength(2);
  });

  it('a failure of the request in flight does not fail the callers queued behind it', async () => {
    const { group, catchUp, lines } = setUp();
    const first = ask(catchUp, false, 'queue', '/', 'a');
    await settle();
    const second = ask(catchUp, false, 'queue', '/', 'b');
    group.calls[0]?.reject(new Error('stopped'));
    await first;
    await settle();
    group.answer(1);
    await second;
    expect(group.calls).toHaveLength(2);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      expect.stringContaining("queue 'a' in vhost '/': unknown on this node"),
    ]);
  });
});
