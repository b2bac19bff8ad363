/**
 * The JSON shapes of client connections, channels and consumers, as RabbitMQ's management API
 * shows them (`GET /api/connections`, `/api/channels`, `/api/consumers`), from the facts a node
 * reports of its connections (broker/client-connection.ts). Pure functions of their inputs.
 *
 * A channel's name is RabbitMQ's: its connection's name and its number, "127.0.0.1:54321 ->
 * 127.0.0.1:5680 (1)".
 */
import type { ChannelFacts, ConsumerFacts } from '../broker/client-connection.ts';
import type { NodeConnectionFacts } from '../broker/connection-directory.ts';
import type { Json } from './views.ts';

/** A channel with the connection it is on. */
export interface ChannelOf {
  readonly connection: NodeConnectionFacts;
  readonly channel: ChannelFacts;
}

/** A consumer with the channel it is on. */
export interface ConsumerOf extends ChannelOf {
  readonly consumer: ConsumerFacts;
}

/** RabbitMQ's name of channel `number` of connection `connection`. */
export function channelName(connection: string, number: number): string {
  return `${connection} (${number})`;
}

export function connectionJson(c: NodeConnectionFacts): Json {
  const provided = c.clientProperties.connection_name;
  return {
    name: c.name,
    node: c.node,
    user: c.user,
    vhost: c.vhost,
    protocol: c.protocol,
    type: 'network',
    auth_mechanism: 'PLAIN',
    ssl: c.ssl,
    peer_host: c.peerHost,
    peer_port: c.peerPort,
    host: c.host,
    port: c.port,
    state: c.state,
    connected_at: c.connectedAt,
    channels: c.channels.length,
    channel_max: c.channelMax,
    frame_max: c.frameMax,
    // RabbitMQ's `timeout` is the negotiated heartbeat, in seconds.
    timeout: Math.round(c.heartbeatMs / 1000),
    client_properties: c.clientProperties as Json,
    ...(typeof provided === 'string' ? { user_provided_name: provided } : {}),
    recv_oct: c.recvOct,
    send_oct: c.sendOct,
    // Styx's own: the broker's id of the connection (the SDK's `connectionName`).
    styx_connection_id: c.id,
  };
}

/** The fields of a channel or consumer that name its connection. */
function connectionDetails(c: NodeConnectionFacts): { [key: string]: Json } {
  return { name: c.name, peer_host: c.peerHost, peer_port: c.peerPort };
}

export function channelJson({ connection: c, channel: ch }: ChannelOf): Json {
  return {
    name: channelName(c.name, ch.number),
    node: c.node,
    number: ch.number,
    user: c.user,
    vhost: c.vhost,
    connection_details: connectionDetails(c),
    state: ch.state,
    consumer_count: ch.consumers.length,
    messages_unacknowledged: ch.messagesUnacknowledged,
    messages_unconfirmed: ch.messagesUnconfirmed,
    prefetch_count: ch.prefetchCount,
    confirm: ch.confirm,
    transactional: false,
  };
}

export function consumerJson({ connection: c, channel: ch, consumer: k }: ConsumerOf): Json {
  return {
    queue: { name: k.queue.name, vhost: k.queue.vhost },
    consumer_tag: k.consumerTag,
    channel_details: {
      name: channelName(c.name, ch.number),
      number: ch.number,
      node: c.node,
      user: c.user,
      connection_name: c.name,
      peer_host: c.peerHost,
      peer_port: c.peerPort,
    },
    ack_required: k.ackRequired,
    prefetch_count: k.prefetchCount,
    exclusive: k.exclusive,
    arguments: k.arguments as Json,
    active: true,
    activity_status: 'up',
  };
}

/** The channels of `connections`, in connection then channel order. */
export function channelsOf(connections: readonly NodeConnectionFacts[]): ChannelOf[] {
  return connections.flatMap((connection) =>
    [...connection.channels].sort((a, b) => a.number - b.number).map((channel) => ({ connection, channel })),
  );
}

/** The consumers of `connections`' channels. */
export function consumersOf(connections: readonly NodeConnectionFacts[]): ConsumerOf[] {
  return channelsOf(connections).flatMap((of) =>
    of.channel.consumers.map((consumer) => ({ ...of, consumer })),
  );
}
