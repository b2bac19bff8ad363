import { describe, expect, it } from 'vitest';
import { transportCompliance } from '../compliance/transport-compliance.ts';
import type { InProcessTransport } from './in-process-transport.ts';
import { InProcessHub } from './in-process-transport.ts';
import type { PeerBatch, Transport } from './transport.ts';

let hub = new InProcessHub();
let transports: Transport[] = [];

transportCompliance('InProcessTransport', {
  async start(count) {
    hub = new InProcessHub();
    transports = Array.from({ length: count }, (_, i) => hub.connect(`n${i}`));
    return transports;
  },
  async cut(index) {
    hub.disconnect(`n${index}`);
  },
  unreachablePeer: () => 'nobody',
  async teardown() {
    for (const transport of transports) await transport.close();
  },
});

describe('InProcessHub.isolate', () => {
  const batch = (from: string): PeerBatch => ({ from, messages: [], quiesce: [] });
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('drops batches both ways, tells each side the other is down, and delivers again once healed', async () => {
    const partitioned = new InProcessHub();
    const [a, b, c] = ['a', 'b', 'c'].map((id) => partitioned.connect(id)) as InProcessTransport[];
    const received = new Map<string, string[]>();
    const down = new Map<string, string[]>();
    for (const t of [a, b, c] as InProcessTransport[]) {
      received.set(t.nodeId, []);
      down.set(t.nodeId, []);
      t.onReceive((got) => received.get(t.nodeId)?.push(got.from));
      t.onPeerDown((peer) => down.get(t.nodeId)?.push(peer));
    }
    partitioned.isolate('a');
    expect(Object.fromEntries(down)).toEqual({ a: ['b', 'c'], b: ['a'], c: ['a'] });
    // Sending into or out of the partition fails nothing: the batch is lost, as on a cut link.
    await Promise.all([a?.send('b', batch('a')), b?.send('a', batch('b')), b?.send('c', batch('b'))]);
    await settle();
    expect(Object.fromEntries(received)).toEqual({ a: [], b: [], c: ['b'] });
    partitioned.isolate(undefined);
    // A batch already in flight when the partition starts is lost too.
    const inFlight = c?.send('a', batch('c'));
    partitioned.isolate('a');
    await inFlight;
    partitioned.isolate(undefined);
    await Promise.all([a?.send('b', batch('a')), b?.send('a', batch('b'))]);
    await settle();
    expect(Object.fromEntries(received)).toEqual({ a: ['b'], b: ['a'], c: ['b'] });
  });
});
