import { describe, expect, it } from 'vitest';
import type { ClientChannel, ClientConnection } from './client-connection.ts';
import { ClientConnections } from './client-connections.ts';

/** A connection with open channels `numbers` (each channel a distinct object). */
function connection(
  id: string,
  numbers: number[],
): ClientConnection & { channels: Map<number, ClientChannel> } {
  const channels = new Map<number, ClientChannel>();
  for (const n of numbers) {
    channels.set(n, {
      deliver: () => undefined,
      consumerCancelled: () => undefined,
      reassertConsumers: () => undefined,
      facts: () => {
        throw new Error('not listed here');
      },
    });
  }
  return {
    id,
    session: { user: 'guest', vhost: '/', connectionId: id },
    channels,
    channelCount: numbers.length,
    publisherCount: 0,
    consumerCount: 2,
    channelFor: (n) => channels.get(n),
    openChannels: () => channels.values(),
    setMemoryBlocked: () => undefined,
    closeGracefully: async () => undefined,
    info: () => {
      throw new Error('not listed here');
    },
    close: () => undefined,
  };
}

describe('ClientConnections', () => {
  it('finds a channel by owner id, the connection id being everything before the last slash', () => {
    const connections = new ClientConnections();
    const a = connection('node/with/slash:run.1', [1, 7]);
    connections.add(a);
    connections.add(connection('other:run.2', [1]));
    expect(connections.channel('node/with/slash:run.1/7')).toBe(a.channels.get(7));
    expect(connections.channel('node/with/slash:run.1/2')).toBeUndefined();
    expect(connections.channel('gone:run.3/1')).toBeUndefined();
  });

  it('finds a channel again by the same owner id only while its connection lives and the channel is open', () => {
    const connections = new ClientConnections();
    const a = connection('n:r.1', [1, 2]);
    connections.add(a);
    const owner = 'n:r.1/2';
    const first = a.channels.get(2);
    expect(connections.channel(owner)).toBe(first);
    expect(connections.channel(owner)).toBe(first);
    // The channel closes, then a new one opens with the same number: the new one is found.
    a.channels.delete(2);
    expect(connections.channel(owner)).toBeUndefined();
    const reopened = connection('n:r.1', [2]).channels.get(2) as ClientChannel;
    a.channels.set(2, reopened);
    expect(connections.channel(owner)).toBe(reopened);
    // The connection goes: its channels are not found any more, even though it still holds them.
    expect(connections.delete(a)).toBe(true);
    expect(connections.channel(owner)).toBeUndefined();
    expect(connections.channel('n:r.1/1')).toBeUndefined();
    // A connection that was unknown when an owner id was first asked for is found once added.
    expect(connections.channel('n:r.2/3')).toBeUndefined();
    const b = connection('n:r.2', [3]);
    connections.add(b);
    expect(connections.channel('n:r.2/3')).toBe(b.channels.get(3));
  });

  it('sums figures and lists channels over every connection; forgets a deleted one', () => {
    const connections = new ClientConnections();
    const a = connection('n:r.1', [1, 2]);
    connections.add(a);
    connections.add(connection('n:r.2', [3]));
    expect(connections.sum((c) => c.channelCount)).toBe(3);
    expect([...connections.openChannels()]).toHaveLength(3);
    expect(connections.delete(a)).toBe(true);
    expect(connections.delete(a)).toBe(false);
    expect(connections.has('n:r.1')).toBe(false);
    expect(connections.size).toBe(1);
  });
});
