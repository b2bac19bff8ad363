import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PeerUnreachableError } from '../group/errors.ts';
import type { PeerBatch, Transport } from '../group/transport.ts';
import type { NodeId } from '../raft/types.ts';
import { EntryType, MessageType, message } from '../raft/types.ts';

/** How the suite gets connected transports of one implementation. */
export interface TransportHarness {
  /**
   * Before each test: `count` transports, each able to reach every other (for a network transport:
   * started, listening, and told each other's addresses; connections may still be opened lazily).
   */
  start(count: number): Promise<readonly Transport[]>;
  /**
   * Cut the node of transport `index` off, as a crash or a partition would: its connections close,
   * its peers must hear it is down, and nothing reaches it or leaves it any more.
   */
  cut(index: number): Promise<void>;
  /** A node id that none of the transports can reach (never started, or nothing listens there). */
  unreachablePeer(): NodeId;
  /** After each test: close and stop everything the harness started. */
  teardown(): Promise<void>;
}

/** Bound on how long the suite waits for a delivery or a peer-down notice, ms. */
const WAIT_MS = 10_000;

/** A batch whose one heartbeat carries `seq` in its commit field, so order can be checked. */
function numbered(from: NodeId, to: NodeId, seq: number): PeerBatch {
  return {
    from,
    messages: [{ groupId: 'g', message: message(MessageType.Heartbeat, from, to, 1, { commit: seq }) }],
    quiesce: [],
  };
}

const seqOf = (batch: PeerBatch): number => batch.messages[0]?.message.commit ?? -1;

/** Every batch a transport received, in arrival order. */
function collect(transport: Transport): PeerBatch[] {
  const received: PeerBatch[] = [];
  transport.onReceive((batch) => received.push(batch));
  return received;
}

/**
 * Register the `Transport` compliance tests (vitest): the in-process transport and the libp2p one
 * run the same suite, so a `RaftHost` behaves the same over either. Checks the contract written on
 * `Transport`: order per peer, at most once, unreachable peers reject, peer-down notices, close
 * stopping both directions, and snapshot-sized batches.
 */
export function transportCompliance(name: string, harness: TransportHarness): void {
  describe(`Transport compliance: ${name}`, () => {
    let nodes: readonly Transport[];
    const node = (index: number): Transport => {
      const transport = nodes[index];
      if (transport === undefined) throw new RangeError(`no transport ${index}`);
      return transport;
    };

    beforeEach(async () => {
      nodes = await harness.start(3);
    });

    afterEach(async () => {
      await harness.teardown();
    });

    it('delivers the batches of each sender in send order, each once, with their content', async () => {
      const [a, b, c] = [node(0), node(1), node(2)];
      const received = collect(b);
      const count = 200;
      const sends: Promise<void>[] = [];
      // Sends are not awaited one by one: a pipeline of batches must keep its order.
      for (let seq = 0; seq < count; seq++) {
        sends.push(a.send(b.nodeId, numbered(a.nodeId, b.nodeId, seq)));
        sends.push(c.send(b.nodeId, numbered(c.nodeId, b.nodeId, seq)));
      }
      await Promise.all(sends);
      await vi.waitFor(() => expect(received.length).toBe(2 * count), { timeout: WAIT_MS });
      const all = Array.from({ length: count }, (_, i) => i);
      expect(received.filter((x) => x.from === a.nodeId).map(seqOf)).toEqual(all);
      expect(received.filter((x) => x.from === c.nodeId).map(seqOf)).toEqual(all);
      expect(received.find((x) => x.from === a.nodeId)).toEqual(numbered(a.nodeId, b.nodeId, 0));
    });

    it('carries every field of a batch: several groups, entries and quiesce notices', async () => {
      const [a, b] = [node(0), node(1)];
      const received = collect(b);
      const batch: PeerBatch = {
        from: a.nodeId,
        messages: [
          {
            groupId: 'queue/one',
            message: message(MessageType.App, a.nodeId, b.nodeId, 3, {
              logTerm: 2,
              index: 7,
              commit: 6,
              entries: [
                { term: 3, index: 8, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) },
                { term: 3, index: 9, type: EntryType.ConfChange, data: new Uint8Array(0) },
              ],
            }),
          },
          {
            groupId: 'metadata',
            message: message(MessageType.Vote, a.nodeId, b.nodeId, 4, { context: 'x' }),
          },
        ],
        quiesce: [{ groupId: 'queue/two', term: 5, commit: 11 }],
      };
      await a.send(b.nodeId, batch);
      await vi.waitFor(() => expect(received.length).toBe(1), { timeout: WAIT_MS });
      expect(received[0]).toEqual(batch);
    });

    it('rejects a send to a peer it cannot reach with PeerUnreachableError', async () => {
      const a = node(0);
      const peer = harness.unreachablePeer();
      await expect(a.send(peer, numbered(a.nodeId, peer, 0))).rejects.toBeInstanceOf(PeerUnreachableError);
      // A later send tries again, and fails the same way.
      await expect(a.send(peer, numbered(a.nodeId, peer, 1))).rejects.toBeInstanceOf(PeerUnreachableError);
    });

    it("tells a node's peers it is down when it is cut off, and sends to it reject", async () => {
      const [a, b, c] = [node(0), node(1), node(2)];
      const downAtA: NodeId[] = [];
      const downAtB: NodeId[] = [];
      a.onPeerDown((peer) => downAtA.push(peer));
      b.onPeerDown((peer) => downAtB.push(peer));
      const received = collect(c);
      // Connections exist (a network transport may open them lazily, on a first send).
      await a.send(c.nodeId, numbered(a.nodeId, c.nodeId, 0));
      await b.send(c.nodeId, numbered(b.nodeId, c.nodeId, 0));
      await vi.waitFor(() => expect(received.length).toBe(2), { timeout: WAIT_MS });

      await harness.cut(2);
      await vi.waitFor(() => expect(downAtA).toContain(c.nodeId), { timeout: WAIT_MS });
      await vi.waitFor(() => expect(downAtB).toContain(c.nodeId), { timeout: WAIT_MS });
      await expect(a.send(c.nodeId, numbered(a.nodeId, c.nodeId, 1))).rejects.toBeInstanceOf(
        PeerUnreachableError,
      );
      expect(received.length).toBe(2);
      // The nodes that are still up keep talking.
      const atB = collect(b);
      await a.send(b.nodeId, numbered(a.nodeId, b.nodeId, 7));
      await vi.waitFor(() => expect(atB.map(seqOf)).toEqual([7]), { timeout: WAIT_MS });
    });

    it('stops both ways after close(): its sends reject, batches to it are not delivered', async () => {
      const [a, b, c] = [node(0), node(1), node(2)];
      const atA = collect(a);
      const atB = collect(b);
      await b.send(a.nodeId, numbered(b.nodeId, a.nodeId, 0));
      await vi.waitFor(() => expect(atA.length).toBe(1), { timeout: WAIT_MS });

      await a.close();
      await expect(a.send(b.nodeId, numbered(a.nodeId, b.nodeId, 1))).rejects.toBeInstanceOf(
        PeerUnreachableError,
      );
      // A send towards the closed node may resolve (written before the close is seen) or reject.
      await b.send(a.nodeId, numbered(b.nodeId, a.nodeId, 2)).catch(() => undefined);
      await c.send(b.nodeId, numbered(c.nodeId, b.nodeId, 3));
      await vi.waitFor(() => expect(atB.map(seqOf)).toEqual([3]), { timeout: WAIT_MS });
      expect(atA.length).toBe(1);
      await a.close(); // idempotent
    });

    it('carries a snapshot-sized batch (several MiB) intact, in order with small ones', async () => {
      const [a, b] = [node(0), node(1)];
      const received = collect(b);
      const data = Uint8Array.from({ length: 6 * 1024 * 1024 }, (_, i) => (i * 31 + 7) & 0xff);
      const big: PeerBatch = {
        from: a.nodeId,
        messages: [
          {
            groupId: 'queue/big',
            message: message(MessageType.Snap, a.nodeId, b.nodeId, 2, {
              snapshot: {
                meta: {
                  index: 100,
                  term: 2,
                  confState: {
                    voters: [a.nodeId, b.nodeId],
                    votersOutgoing: [],
                    learners: [],
                    learnersNext: [],
                    autoLeave: false,
                  },
                },
                chunk: 0,
                count: 1,
                totalBytes: data.byteLength,
                data,
              },
            }),
          },
        ],
        quiesce: [],
      };
      const sends = [
        a.send(b.nodeId, numbered(a.nodeId, b.nodeId, 1)),
        a.send(b.nodeId, big),
        a.send(b.nodeId, numbered(a.nodeId, b.nodeId, 3)),
      ];
      await Promise.all(sends);
      await vi.waitFor(() => expect(received.length).toBe(3), { timeout: WAIT_MS });
      expect(seqOf(received[0] as PeerBatch)).toBe(1);
      expect(seqOf(received[2] as PeerBatch)).toBe(3);
      const chunk = received[1]?.messages[0]?.message.snapshot;
      expect(chunk?.data.byteLength).toBe(data.byteLength);
      expect(Buffer.compare(chunk?.data ?? new Uint8Array(0), data)).toBe(0);
    });
  });
}
