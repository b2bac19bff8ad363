import { describe, expect, it } from 'vitest';
import type { Entry, Message } from '../raft/types.ts';
import { EntryType, MessageType, message } from '../raft/types.ts';
import { PeerOutbox } from './peer-outbox.ts';
import { messageBytes } from './transport.ts';

function run(first: number, count: number): Entry[] {
  return Array.from({ length: count }, (_, k) => ({
    term: 2,
    index: first + k,
    type: EntryType.Normal,
    data: new Uint8Array(50),
  }));
}

function app(index: number, count: number, commit: number): Message {
  return message(MessageType.App, 'n1', 'n2', 2, {
    index,
    logTerm: index === 0 ? 0 : 2,
    entries: run(index + 1, count),
    commit,
  });
}

describe('a peer outbox', () => {
  it('gives each group one append per turn, whatever the interleaving of groups', () => {
    const out = new PeerOutbox();
    const pushed = [app(0, 2, 0), app(10, 1, 9), app(2, 3, 2), app(11, 1, 10), app(5, 0, 5)];
    out.push('a', pushed[0] as Message);
    out.push('b', pushed[1] as Message);
    out.push('a', pushed[2] as Message);
    out.push('b', pushed[3] as Message);
    out.push('a', pushed[4] as Message);
    expect(out.messages.map((m) => m.groupId)).toEqual(['a', 'b']);
    const [a, b] = out.messages.map((m) => m.message) as [Message, Message];
    expect(a.entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    expect(a.commit).toBe(5);
    expect(b.entries.map((e) => e.index)).toEqual([11, 12]);
    expect(out.folded).toBe(3);
    // The memory bound counts what was pushed, so that the host releases exactly what it took.
    expect(out.bytes).toBe(pushed.reduce((sum, m) => sum + messageBytes(m), 0));
  });

  it('keeps order around a message it cannot fold: what follows starts a new append', () => {
    const out = new PeerOutbox();
    out.push('a', app(0, 1, 0));
    out.push('a', message(MessageType.TimeoutNow, 'n1', 'n2', 2));
    out.push('a', app(1, 1, 1));
    expect(out.messages.map((m) => m.message.type)).toEqual([
      MessageType.App,
      MessageType.TimeoutNow,
      MessageType.App,
    ]);
    expect(out.folded).toBe(0);
  });

  it('bounds a folded append by its byte limit and drops heartbeats behind appends', () => {
    const out = new PeerOutbox(120);
    out.push('a', app(0, 2, 0)); // 100 bytes
    out.push('a', app(2, 1, 1)); // would make 150: sent on its own
    out.push('a', message(MessageType.Heartbeat, 'n1', 'n2', 2, { commit: 1 }));
    expect(out.messages.map((m) => m.message.entries.length)).toEqual([2, 1]);
    expect(out.folded).toBe(1);
    expect(out.empty).toBe(false);
    expect(new PeerOutbox().empty).toBe(true);
  });
});
