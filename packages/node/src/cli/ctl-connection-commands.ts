/**
 * `styx ctl`'s verbs for clients and for the node itself, with rabbitmqctl's names, arguments and
 * columns: list_connections, list_channels, list_consumers, close_connection, status, and the two
 * queue verbs an operator reaches for while looking at clients, purge_queue and delete_queue.
 *
 * Lists are the cluster's (the node asked asks every member, management/connections-api.ts); a
 * member that did not answer is named on stderr, and the list is printed without its clients.
 */
import { UsageError } from './args.ts';
import type { Column, CommandSpec, Context, Row } from './ctl-context.ts';
import { announce, arg, cell, field, nested, pickColumns, printList } from './ctl-context.ts';

/** The management API's header naming the members that did not answer (connections-api.ts). */
const UNANSWERED_HEADER = 'x-styx-unanswered-nodes';

const CONNECTION_COLUMNS: readonly Column[] = [
  field('name'),
  field('user'),
  field('vhost'),
  field('node'),
  field('peer_host'),
  field('peer_port'),
  field('host'),
  field('port'),
  field('protocol'),
  field('state'),
  field('channels'),
  field('connected_at'),
  field('timeout'),
  field('frame_max'),
  field('channel_max'),
  field('client_properties'),
  field('user_provided_name'),
  field('recv_oct'),
  field('send_oct'),
  field('auth_mechanism'),
  field('ssl'),
  field('type'),
];

const CHANNEL_COLUMNS: readonly Column[] = [
  field('name'),
  field('node'),
  nested('connection', 'connection_details', 'name'),
  field('number'),
  field('user'),
  field('vhost'),
  field('consumer_count'),
  field('messages_unacknowledged'),
  field('messages_unconfirmed'),
  field('prefetch_count'),
  field('confirm'),
  field('transactional'),
  field('state'),
];

const CONSUMER_COLUMNS: readonly Column[] = [
  nested('queue_name', 'queue', 'name'),
  nested('channel', 'channel_details', 'name'),
  nested('connection', 'channel_details', 'connection_name'),
  field('consumer_tag'),
  field('ack_required'),
  field('prefetch_count'),
  field('active'),
  field('activity_status'),
  field('exclusive'),
  field('arguments'),
];

/** `path`'s list, saying on stderr which members did not answer (their clients are missing). */
async function clusterList(ctx: Context, path: readonly string[]): Promise<Row[]> {
  let unanswered: string | null = null;
  const rows = (await ctx.request('GET', path, undefined, {
    onHeaders: (headers) => {
      unanswered = headers.get(UNANSWERED_HEADER);
    },
  })) as Row[];
  if (unanswered !== null) {
    ctx.io.stderr(
      `styx ctl: Warning: nodes that did not answer (their clients are not listed): ${unanswered}\n`,
    );
  }
  return rows;
}

const names = (columns: readonly Column[]): string => columns.map(([n]) => n).join(', ');

/** GET /api/overview and /api/nodes/{node}, the parts `status` prints. */
interface Overview {
  readonly node: string;
  readonly product_version: string | null;
  readonly listeners?: readonly Row[];
  readonly alarms?: readonly Row[];
}

function mib(bytes: unknown): string {
  return typeof bytes === 'number' ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : 'unknown';
}

/** rabbitmqctl status' sections, for the facts Styx has. */
function statusLines(overview: Overview, node: Row): string[] {
  const section = (title: string, lines: readonly string[]): string[] => [
    title,
    '',
    ...(lines.length === 0 ? ['(none)'] : lines),
    '',
  ];
  const alarms: string[] = [];
  if (node.mem_alarm === true) alarms.push('memory: resident memory above the budget, publishers blocked');
  if (node.disk_free_alarm === true) alarms.push('disk: free disk space below the limit, publishers blocked');
  for (const alarm of overview.alarms ?? []) alarms.push(`${String(alarm.type)}: ${JSON.stringify(alarm)}`);
  const limit = node.mem_limit === 0 ? 'none' : mib(node.mem_limit);
  return [
    ...section('Runtime', [
      `OS PID: ${cell(node.os_pid)}`,
      `Uptime (seconds): ${typeof node.uptime === 'number' ? Math.round(node.uptime / 1000) : ''}`,
      `Styx version: ${cell(overview.product_version)}`,
      `Node name: ${overview.node}`,
      `Processors: ${cell(node.processors)}`,
      `Maintenance mode: ${node.being_drained === true ? 'draining' : 'off'}`,
    ]),
    ...section(
      'Listeners',
      (overview.listeners ?? []).map(
        (l) => `Interface: ${cell(l.ip_address)}, port: ${cell(l.port)}, protocol: ${cell(l.protocol)}`,
      ),
    ),
    ...section('Memory', [`Used: ${mib(node.mem_used)}, budget: ${limit}`]),
    // As rabbitmqctl status' "Free Disk Space" and "File Descriptors" sections (null: not measured).
    ...section('Free Disk Space', [
      `Low free disk space watermark: ${mib(node.disk_free_limit)}`,
      `Free disk space: ${mib(node.disk_free)}`,
    ]),
    ...section('File Descriptors', [
      `Total: ${cell(node.fd_used)}, limit: ${cell(node.fd_total)}`,
      `Sockets: ${cell(node.sockets_used)}, limit: ${cell(node.sockets_total)}`,
    ]),
    ...section('Alarms', alarms),
    ...section('Totals', [`Connection count: ${cell(node.sockets_used)}`]),
  ];
}

export const CONNECTION_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  list_connections: {
    usage: '[-p vhost] [column ...]',
    summary:
      "list the cluster's client connections (of one vhost with -p; default columns: user peer_host " +
      `peer_port state); columns: ${names(CONNECTION_COLUMNS)}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const columns = pickColumns(CONNECTION_COLUMNS, args, ['user', 'peer_host', 'peer_port', 'state']);
      const path = ctx.vhostGiven ? ['vhosts', ctx.vhost, 'connections'] : ['connections'];
      printList(ctx, 'Listing connections ...', await clusterList(ctx, path), columns);
    },
  },
  list_channels: {
    usage: '[-p vhost] [column ...]',
    summary:
      "list the cluster's channels (of one vhost with -p; default columns: name user consumer_count " +
      `messages_unacknowledged); columns: ${names(CHANNEL_COLUMNS)}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const defaults = ['name', 'user', 'consumer_count', 'messages_unacknowledged'];
      const columns = pickColumns(CHANNEL_COLUMNS, args, defaults);
      const path = ctx.vhostGiven ? ['vhosts', ctx.vhost, 'channels'] : ['channels'];
      printList(ctx, 'Listing channels ...', await clusterList(ctx, path), columns);
    },
  },
  list_consumers: {
    usage: '[-p vhost] [column ...]',
    summary: `list the consumers of a vhost's queues, cluster-wide; columns: ${names(CONSUMER_COLUMNS)}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const defaults = [
        'queue_name',
        'channel',
        'consumer_tag',
        'ack_required',
        'prefetch_count',
        'active',
        'arguments',
      ];
      const columns = pickColumns(CONSUMER_COLUMNS, args, defaults);
      const rows = await clusterList(ctx, ['consumers', ctx.vhost]);
      printList(ctx, `Listing consumers in vhost ${ctx.vhost} ...`, rows, columns);
    },
  },
  close_connection: {
    usage: 'NAME REASON',
    summary:
      'close the client connection named NAME (as list_connections shows it, e.g. "127.0.0.1:54321 -> ' +
      '127.0.0.1:5680"), on whichever node holds it: the client receives 320 CONNECTION_FORCED with REASON',
    min: 2,
    max: 2,
    async run(ctx, args) {
      const [name, reason] = [arg(args, 0), arg(args, 1)];
      // An HTTP header carries the reason: printable ASCII only.
      if (!/^[\x20-\x7e]*$/.test(reason)) {
        throw new UsageError('the reason must be printable ASCII (it travels in an HTTP header)');
      }
      announce(ctx, `Closing connection ${name}, reason: ${reason}...`);
      await ctx.request('DELETE', ['connections', name], undefined, { headers: { 'X-Reason': reason } });
    },
  },
  status: {
    usage: '',
    summary:
      "the node's facts: version, uptime, listeners, memory against its budget, alarms, client connections",
    min: 0,
    max: 0,
    async run(ctx) {
      const overview = (await ctx.request('GET', ['overview'])) as Overview;
      const node = (await ctx.request('GET', ['nodes', overview.node])) as Row;
      if (ctx.json) {
        ctx.io.stdout(`${JSON.stringify({ ...node, ...overview }, null, 2)}\n`);
        return;
      }
      announce(ctx, `Status of node ${overview.node} ...`);
      ctx.io.stdout(`${statusLines(overview, node).join('\n')}`);
    },
  },
  purge_queue: {
    usage: '[-p vhost] QUEUE',
    summary: 'remove every ready message of a queue (unacked ones stay with their consumers)',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const queue = arg(args, 0);
      announce(ctx, `Purging queue '${queue}' in vhost '${ctx.vhost}' ...`);
      await ctx.request('DELETE', ['queues', ctx.vhost, queue, 'contents']);
    },
  },
  delete_queue: {
    usage: '[-p vhost] QUEUE [--if-empty] [--if-unused]',
    summary:
      'delete a queue and its messages (refused with --if-empty if it has messages, --if-unused if consumed)',
    min: 1,
    max: 1,
    options: ['if-empty', 'if-unused'],
    async run(ctx, args) {
      const queue = arg(args, 0);
      const query: Record<string, string> = {};
      if (ctx.options['if-empty'] === 'true') query['if-empty'] = 'true';
      if (ctx.options['if-unused'] === 'true') query['if-unused'] = 'true';
      announce(ctx, `Deleting queue '${queue}' on vhost '${ctx.vhost}' ...`);
      await ctx.request('DELETE', ['queues', ctx.vhost, queue], undefined, { query });
    },
  },
};
