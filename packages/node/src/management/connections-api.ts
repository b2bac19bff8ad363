/**
 * The management API's endpoints for client connections, channels and consumers, RabbitMQ's:
 *
 *   GET     /api/connections, /api/vhosts/{vhost}/connections
 *   GET     /api/connections/{name}, /api/connections/{name}/channels
 *   DELETE  /api/connections/{name}          (the `X-Reason` header is the text the client receives)
 *   GET     /api/channels, /api/vhosts/{vhost}/channels, /api/channels/{name}
 *   GET     /api/consumers, /api/consumers/{vhost}
 *
 * Cluster-wide: the node answering asks every member for its connections (broker/
 * connection-directory.ts). Members that did not answer in time are named in the
 * `X-Styx-Unanswered-Nodes` header, and in a page's `unanswered_nodes` (`?page=`, pagination.ts).
 *
 * Who sees what, as RabbitMQ: `administrator` and `monitoring` users see every connection; other
 * management users only their own (those they opened, as that user). Closing a connection needs
 * `administrator`, except one's own. A connection is named by RabbitMQ's name,
 * "127.0.0.1:54321 -> 127.0.0.1:5680"; a channel by its connection's name and number, "... (1)".
 */
import type { Broker } from '../broker/broker.ts';
import type { ClusterConnections, NodeConnectionFacts } from '../broker/connection-directory.ts';
import type { UserRecord } from '../metadata/types.ts';
import { ADMINISTRATOR, MONITORING } from './access.ts';
import { forbidden, notFound } from './api-error.ts';
import type { ApiResponse, Route, RoutedRequest } from './api-types.ts';
import type { ChannelOf, ConsumerOf } from './connection-views.ts';
import {
  channelJson,
  channelName,
  channelsOf,
  connectionJson,
  consumerJson,
  consumersOf,
} from './connection-views.ts';
import type { PageableList, SortValue } from './pagination.ts';
import { pageOf, wantsPage } from './pagination.ts';
import type { Json } from './views.ts';

/** RabbitMQ's reason when the operator gives none. */
export const DEFAULT_CLOSE_REASON = 'Closed via management plugin';

/** Longest close reason kept, characters (AMQP's reply text is a short string: 255 bytes). */
const MAX_REASON_LENGTH = 200;

/** The header naming the members whose connections are missing from the answer. */
export const UNANSWERED_HEADER = 'X-Styx-Unanswered-Nodes';

function seesAll(user: UserRecord): boolean {
  return user.tags.includes(ADMINISTRATOR) || user.tags.includes(MONITORING);
}

/** A list of rendered items, pageable by any of `sortFields` (top-level fields of each item). */
function jsonPaging(name: (item: Json) => string, sortFields: readonly string[]): PageableList<Json> {
  const field = (key: string) => (item: Json) => {
    const value = (item as { [key: string]: Json })[key];
    return (typeof value === 'object' ? null : value) as SortValue;
  };
  return {
    name,
    json: (item) => item,
    sortKeys: Object.fromEntries(sortFields.map((key) => [key, field(key)])),
  };
}

const nameField = (item: Json): string => String((item as { name?: Json }).name ?? '');
const CONNECTION_PAGING = jsonPaging(nameField, [
  'name',
  'node',
  'user',
  'vhost',
  'peer_host',
  'state',
  'channels',
  'connected_at',
  'recv_oct',
  'send_oct',
]);
const CHANNEL_PAGING = jsonPaging(nameField, [
  'name',
  'node',
  'user',
  'vhost',
  'number',
  'consumer_count',
  'messages_unacknowledged',
  'prefetch_count',
  'state',
]);
const CONSUMER_PAGING = jsonPaging(
  (item) => String((item as { consumer_tag?: Json }).consumer_tag ?? ''),
  ['consumer_tag', 'ack_required', 'prefetch_count', 'exclusive'],
);

export function connectionRoutes(broker: Broker): Route[] {
  const directory = broker.connectionDirectory;

  /** The cluster's connections `user` may see (of `vhost` only, when given). */
  async function visible(user: UserRecord, vhost?: string): Promise<ClusterConnections> {
    const all = await directory.gather();
    const everyone = seesAll(user);
    return {
      connections: all.connections.filter(
        (c) => (everyone || c.user === user.name) && (vhost === undefined || c.vhost === vhost),
      ),
      unanswered: all.unanswered,
    };
  }

  /** The items as a list, or the page asked for; either way saying which members did not answer. */
  async function reply(
    request: RoutedRequest,
    gathered: ClusterConnections,
    items: Json[],
    paging: PageableList<Json>,
  ): Promise<ApiResponse> {
    const unanswered = gathered.unanswered;
    const headers =
      unanswered.length === 0 ? undefined : { [UNANSWERED_HEADER]: unanswered.map((u) => u.node).join(', ') };
    let body: Json = items;
    if (wantsPage(request.query)) {
      const page = (await pageOf(items, request.query, paging)) as { [key: string]: Json };
      body = { ...page, unanswered_nodes: unanswered.map((u) => ({ node: u.node, reason: u.reason })) };
    }
    return headers === undefined ? { status: 200, body } : { status: 200, body, headers };
  }

  /**
   * The connection named `name`: 404 if no member that answered holds it (naming those that did
   * not), 403 if it is another user's and `user` sees only its own.
   */
  async function requireConnection(user: UserRecord, name: string): Promise<NodeConnectionFacts> {
    const all = await directory.gather();
    const found = all.connections.find((c) => c.name === name);
    if (found === undefined) {
      const silent = all.unanswered.map((u) => u.node);
      const note = silent.length === 0 ? '' : ` (nodes that did not answer: ${silent.join(', ')})`;
      throw notFound(`no connection '${name}'${note}`);
    }
    if (!seesAll(user) && found.user !== user.name) {
      throw forbidden(`access to connection '${name}' refused for user '${user.name}' (not its own)`);
    }
    return found;
  }

  const listConnections = async (request: RoutedRequest): Promise<ApiResponse> => {
    const gathered = await visible(request.user, request.params[0]);
    return reply(request, gathered, gathered.connections.map(connectionJson), CONNECTION_PAGING);
  };

  const listChannels = async (request: RoutedRequest): Promise<ApiResponse> => {
    const gathered = await visible(request.user, request.params[0]);
    return reply(request, gathered, channelsOf(gathered.connections).map(channelJson), CHANNEL_PAGING);
  };

  const listConsumers = async (request: RoutedRequest): Promise<ApiResponse> => {
    const gathered = await visible(request.user, request.params[0]);
    const consumers = consumersOf(gathered.connections).filter(
      // A consumer is listed in its queue's vhost (its connection's, always).
      (of: ConsumerOf) => request.params[0] === undefined || of.consumer.queue.vhost === request.params[0],
    );
    return reply(request, gathered, consumers.map(consumerJson), CONSUMER_PAGING);
  };

  const getConnection = async (request: RoutedRequest): Promise<ApiResponse> => {
    const connection = await requireConnection(request.user, request.params[0] as string);
    return { status: 200, body: connectionJson(connection) };
  };

  const connectionChannels = async (request: RoutedRequest): Promise<ApiResponse> => {
    const connection = await requireConnection(request.user, request.params[0] as string);
    return { status: 200, body: channelsOf([connection]).map(channelJson) };
  };

  const getChannel = async (request: RoutedRequest): Promise<ApiResponse> => {
    const name = request.params[0] as string;
    // "<connection name> (<number>)": the connection is looked up (and access checked) first.
    const match = /^(.*) \((\d{1,5})\)$/.exec(name);
    const connection = await requireConnection(request.user, match?.[1] ?? name);
    const channel = channelsOf([connection]).find(
      (of: ChannelOf) => channelName(connection.name, of.channel.number) === name,
    );
    if (channel === undefined) throw notFound(`no channel '${name}'`);
    return { status: 200, body: channelJson(channel) };
  };

  const closeConnection = async (request: RoutedRequest): Promise<ApiResponse> => {
    const name = request.params[0] as string;
    const connection = await requireConnection(request.user, name);
    if (connection.user !== request.user.name && !request.user.tags.includes(ADMINISTRATOR)) {
      throw forbidden(
        `closing connection '${name}' of user '${connection.user}' needs the administrator tag`,
      );
    }
    const given = request.header?.('x-reason')?.trim() ?? '';
    const reason = given === '' ? DEFAULT_CLOSE_REASON : given.slice(0, MAX_REASON_LENGTH);
    if (!(await directory.close(connection.nodeId, name, reason))) {
      throw notFound(`no connection '${name}' (it closed meanwhile)`);
    }
    return { status: 204 };
  };

  return [
    { path: ['connections'], methods: { GET: listConnections } },
    { path: ['connections', ':name'], methods: { GET: getConnection, DELETE: closeConnection } },
    { path: ['connections', ':name', 'channels'], methods: { GET: connectionChannels } },
    { path: ['vhosts', ':vhost', 'connections'], methods: { GET: listConnections } },
    { path: ['channels'], methods: { GET: listChannels } },
    { path: ['channels', ':name'], methods: { GET: getChannel } },
    { path: ['vhosts', ':vhost', 'channels'], methods: { GET: listChannels } },
    { path: ['consumers'], methods: { GET: listConsumers } },
    { path: ['consumers', ':vhost'], methods: { GET: listConsumers } },
  ];
}
