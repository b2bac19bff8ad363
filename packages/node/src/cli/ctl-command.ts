/**
 * `styx ctl`: rabbitmqctl's commands, on top of a node's management HTTP API, so operators' and
 * guides' commands work with `styx ctl` in place of `rabbitmqctl`:
 *
 *   styx ctl set_policy DLX ".*" '{"dead-letter-exchange":"my-dlx"}' --apply-to queues
 *
 * rabbitmq-queues' verbs for queue replicas (add_member, grow, quorum_status, ...) are here too, in
 * ctl-queue-commands.ts, the queue consistency checks (check_queue, check_queues) in
 * ctl-check-commands.ts, maintenance mode and the rolling-restart checks (drain, revive,
 * check_if_node_is_quorum_critical, await_online_quorum_plus_one) in ctl-maintenance-commands.ts,
 * clients and the node's facts (list_connections, close_connection, status, purge_queue, ...) in
 * ctl-connection-commands.ts;
 * what every command is made of is in ctl-context.ts.
 *
 * Options may come before or after the positional arguments (as rabbitmqctl's). Output is
 * rabbitmqctl's: an informational line ("Listing queues for vhost / ..."), then for list commands
 * a tab-separated table with a header; `--formatter json` prints JSON only; -q drops the
 * informational line, -s the header too.
 *
 * Exit codes: 0 done; 1 refused by the node (its reason is printed) or a check failed; 2 bad usage;
 * 3 a check could not compare what it checks (check_queue[s]: replicas never at one applied index);
 * 69 the node is not reachable; 75 the node did not answer within --timeout.
 */

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Agent } from 'undici';
import { clusterAddressProblem } from '../cluster/cluster-view.ts';
import { parse, UsageError } from './args.ts';
import { ALARM_COMMANDS } from './ctl-alarm-commands.ts';
import { QUEUE_CHECK_COMMANDS } from './ctl-check-commands.ts';
import { CONNECTION_COMMANDS } from './ctl-connection-commands.ts';
import type { Column, CommandOption, CommandSpec, Context, CtlIo, Row } from './ctl-context.ts';
import {
  announce,
  arg,
  CheckFailedError,
  CheckNotComparedError,
  COMMAND_OPTIONS,
  cell,
  field,
  list,
  nested,
  pickColumns,
  printList,
} from './ctl-context.ts';
import { EXPLAIN_COMMANDS } from './ctl-explain-commands.ts';
import { FEATURE_FLAG_COMMANDS } from './ctl-feature-flag-commands.ts';
import { MAINTENANCE_COMMANDS } from './ctl-maintenance-commands.ts';
import { chooseNode, DEFAULT_NODE, NodeNotFoundError } from './ctl-node-discovery.ts';
import { QUEUE_REPLICA_COMMANDS } from './ctl-queue-commands.ts';
import { REDRIVE_COMMANDS } from './ctl-redrive-commands.ts';
import { ConfigFileError } from './server-config.ts';

export type { CtlIo } from './ctl-context.ts';

/** How long to wait for the node by default, seconds (rabbitmqctl's default). */
const DEFAULT_TIMEOUT_S = 60;

const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;
/** A check found nothing wrong but could not verify everything (as a monitoring plugin's UNKNOWN). */
const EXIT_NOT_COMPARED = 3;
/** sysexits' EX_UNAVAILABLE, as rabbitmqctl uses for an unreachable node. */
const EXIT_UNREACHABLE = 69;
/** sysexits' EX_TEMPFAIL, as rabbitmqctl uses for a timeout. */
const EXIT_TIMEOUT = 75;

const GLOBAL_OPTIONS = `Options:
  -p, --vhost VHOST       the virtual host (default: /)
  --node URL              the node's management API (default: $STYX_NODE, else the node running in
                          --data-dir, else in --config's data_dir, else in ./styx-data, else in
                          ./styx-cluster/node-N, else ${DEFAULT_NODE}; said on stderr when unsure)
  --data-dir DIR          talk to the node running in DIR (it writes its address there on start)
  --config FILE           talk to the node of this styx server --config file (its data_dir)
  --cacert FILE           trust the CA certificate(s) in FILE (PEM) for an https:// node, as curl's
                          --cacert (default: $STYX_CACERT; else the system's trusted CAs)
  --username USER         (default: $STYX_USERNAME or guest)
  --password PASSWORD     (default: $STYX_PASSWORD or guest)
  --formatter FORMAT      table (default) or json
  -q, --quiet             no informational line
  -s, --silent            no informational line and no table header
  -t, --timeout SECONDS   how long to wait for the node (default: ${DEFAULT_TIMEOUT_S})
  -h, --help              show help (styx ctl <command> --help for one command)`;

const processIo: CtlIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
};

/** The node refused a request: its HTTP status and `{error, reason}`. */
class NodeRefusedError extends Error {
  readonly code = 'CTL_NODE_REFUSED';
  readonly status: number;
  constructor(status: number, reason: string) {
    super(reason);
    this.name = 'NodeRefusedError';
    this.status = status;
  }
}

/** The node could not be reached or did not answer in time. */
class NodeUnreachableError extends Error {
  readonly code = 'CTL_NODE_UNREACHABLE';
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.name = 'NodeUnreachableError';
    this.exitCode = exitCode;
  }
}

// ---------------------------------------------------------------------------------- columns

const QUEUE_COLUMNS: readonly Column[] = [
  field('name'),
  field('vhost'),
  field('messages'),
  field('messages_ready'),
  field('messages_unacknowledged'),
  field('message_bytes_ready'),
  field('dead_letter_pending', 'messages_dead_letter_pending'),
  field('consumers'),
  field('policy'),
  field('effective_policy_definition'),
  field('durable'),
  field('auto_delete'),
  field('exclusive'),
  field('arguments'),
  field('type'),
  field('state'),
  field('dead_letter_exchange'),
  field('dead_letter_routing_key'),
  field('dead_letter_strategy'),
  nested('dead_lettered_rejected', 'dead_lettered', 'rejected'),
  nested('dead_lettered_expired', 'dead_lettered', 'expired'),
  nested('dead_lettered_maxlen', 'dead_lettered', 'maxlen'),
  nested('dead_lettered_delivery_limit', 'dead_lettered', 'delivery_limit'),
  // In a cluster only (node names): absent on a node alone, so empty there.
  field('leader'),
  field('members'),
  field('online'),
  field('under_replicated'),
];

const EXCHANGE_COLUMNS: readonly Column[] = [
  field('name'),
  field('vhost'),
  field('type'),
  field('durable'),
  field('auto_delete'),
  field('internal'),
  field('arguments'),
  field('policy'),
];

const BINDING_COLUMNS: readonly Column[] = [
  field('source_name', 'source'),
  ['source_kind', () => 'exchange'],
  field('destination_name', 'destination'),
  field('destination_kind', 'destination_type'),
  field('routing_key'),
  field('arguments'),
  field('vhost'),
];

const POLICY_COLUMNS: readonly Column[] = [
  'vhost',
  'name',
  'pattern',
  'apply-to',
  'definition',
  'priority',
].map((name) => field(name));

const PERMISSION_COLUMNS: readonly Column[] = ['user', 'configure', 'write', 'read'].map((name) =>
  field(name),
);

const USER_COLUMNS: readonly Column[] = [field('user', 'name'), field('tags')];

const MEMBER_COLUMNS: readonly Column[] = [
  field('name'),
  field('id'),
  field('cluster_address'),
  field('running'),
  field('metadata_role'),
];

const VHOST_COLUMNS: readonly Column[] = [
  field('name'),
  field('messages'),
  field('messages_ready'),
  field('messages_unacknowledged'),
];

// ---------------------------------------------------------------------------------- commands

/** GET /api/cluster as cluster-api.ts answers it. */
interface ClusterJson {
  readonly self: { readonly id: string; readonly name: string };
  readonly metadata_leader: { readonly id: string; readonly name: string | null } | null;
  readonly members: readonly Row[];
}

/**
 * rabbitmqctl cluster_status's sections (disk nodes, running nodes), then the metadata leader and
 * a table of the members; `--formatter json` prints one object with the same content.
 */
function printClusterStatus(ctx: Context, status: ClusterJson): void {
  const names = (rows: readonly Row[]): string[] => rows.map((m) => String(m.name));
  const running = names(status.members.filter((m) => m.running === true));
  const leader = status.metadata_leader;
  const leaderName = leader === null ? null : (leader.name ?? leader.id);
  if (ctx.json) {
    const out = {
      node: status.self.name,
      node_id: status.self.id,
      disk_nodes: names(status.members),
      running_nodes: running,
      metadata_leader: leaderName,
      members: status.members,
    };
    ctx.io.stdout(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  announce(ctx, `Cluster status of node ${status.self.name} ...`);
  const section = (title: string, lines: readonly string[]): string =>
    `${title}\n\n${lines.length === 0 ? '(none)' : lines.join('\n')}\n`;
  const table = [
    MEMBER_COLUMNS.map(([name]) => name).join('\t'),
    ...status.members.map((row) => MEMBER_COLUMNS.map(([, read]) => cell(read(row))).join('\t')),
  ];
  ctx.io.stdout(
    [
      section('Disk Nodes', names(status.members)),
      section('Running Nodes', running),
      section('Metadata Leader', leaderName === null ? [] : [leaderName]),
      section('Members', table),
    ].join('\n'),
  );
}

/** The user record, or a refusal naming the user (404) — for commands that must not create it. */
async function requireUser(ctx: Context, name: string): Promise<void> {
  await ctx.request('GET', ['users', name]);
}

const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  set_policy: {
    usage: '[-p vhost] [--priority N] [--apply-to queues|exchanges|all] name pattern definition',
    summary:
      'set a policy: queues/exchanges matching the regular expression `pattern` take `definition`, a JSON ' +
      'object of policy keys (e.g. \'{"dead-letter-exchange":"my-dlx"}\'). Matching queues are reconfigured at once.',
    min: 3,
    max: 3,
    options: ['priority', 'apply-to'],
    async run(ctx, args) {
      const [name, pattern, text] = [arg(args, 0), arg(args, 1), arg(args, 2)];
      let definition: unknown;
      try {
        definition = JSON.parse(text);
      } catch (err) {
        throw new UsageError(`the policy definition is not valid JSON: ${(err as Error).message}`);
      }
      const priorityText = ctx.options.priority ?? '0';
      if (!/^-?\d+$/.test(priorityText))
        throw new UsageError(`--priority must be an integer, got '${priorityText}'`);
      const priority = Number(priorityText);
      const applyTo = ctx.options['apply-to'] ?? 'all';
      announce(
        ctx,
        `Setting policy "${name}" for pattern "${pattern}" to "${text}" with priority "${priority}" for vhost "${ctx.vhost}" ...`,
      );
      await ctx.request('PUT', ['policies', ctx.vhost, name], {
        pattern,
        definition,
        priority,
        'apply-to': applyTo,
      });
    },
  },
  clear_policy: {
    usage: '[-p vhost] name',
    summary: 'remove a policy (matching queues go back to their own arguments at once)',
    min: 1,
    max: 1,
    async run(ctx, args) {
      announce(ctx, `Clearing policy "${arg(args, 0)}" on vhost "${ctx.vhost}" ...`);
      await ctx.request('DELETE', ['policies', ctx.vhost, arg(args, 0)]);
    },
  },
  list_policies: {
    usage: '[-p vhost]',
    summary: 'list the policies of a vhost',
    min: 0,
    max: 0,
    async run(ctx) {
      const rows = await list(ctx, ['policies', ctx.vhost]);
      printList(ctx, `Listing policies for vhost "${ctx.vhost}" ...`, rows, POLICY_COLUMNS);
    },
  },
  list_queues: {
    usage: `[-p vhost] [column ...]`,
    summary:
      'list queues with the columns asked for (default: name messages, and leader members on a clustered ' +
      `node); columns: ${QUEUE_COLUMNS.map(([n]) => n).join(', ')}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      let columns = pickColumns(QUEUE_COLUMNS, args, ['name', 'messages']);
      const rows = await list(ctx, ['queues', ctx.vhost]);
      // Only a clustered node's queue objects have `members`: where a queue lives matters there.
      if (args.length === 0 && rows.some((row) => row.members !== undefined)) {
        columns = pickColumns(QUEUE_COLUMNS, [], ['name', 'messages', 'leader', 'members']);
      }
      printList(ctx, `Listing queues for vhost ${ctx.vhost} ...`, rows, columns);
    },
  },
  list_exchanges: {
    usage: '[-p vhost] [column ...]',
    summary: `list exchanges (default columns: name type); columns: ${EXCHANGE_COLUMNS.map(([n]) => n).join(', ')}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const columns = pickColumns(EXCHANGE_COLUMNS, args, ['name', 'type']);
      const rows = await list(ctx, ['exchanges', ctx.vhost]);
      printList(ctx, `Listing exchanges for vhost ${ctx.vhost} ...`, rows, columns);
    },
  },
  list_bindings: {
    usage: '[-p vhost] [column ...]',
    summary: `list bindings, the default exchange's included; columns: ${BINDING_COLUMNS.map(([n]) => n).join(', ')}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const defaults = [
        'source_name',
        'source_kind',
        'destination_name',
        'destination_kind',
        'routing_key',
        'arguments',
      ];
      const columns = pickColumns(BINDING_COLUMNS, args, defaults);
      const rows = await list(ctx, ['bindings', ctx.vhost]);
      printList(ctx, `Listing bindings for vhost ${ctx.vhost}...`, rows, columns);
    },
  },
  list_users: {
    usage: '',
    summary: 'list users and their tags',
    min: 0,
    max: 0,
    async run(ctx) {
      printList(ctx, 'Listing users ...', await list(ctx, ['users']), USER_COLUMNS);
    },
  },
  list_vhosts: {
    usage: '[column ...]',
    summary: `list virtual hosts (default column: name); columns: ${VHOST_COLUMNS.map(([n]) => n).join(', ')}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const columns = pickColumns(VHOST_COLUMNS, args, ['name']);
      printList(ctx, 'Listing vhosts ...', await list(ctx, ['vhosts']), columns);
    },
  },
  list_permissions: {
    usage: '[-p vhost]',
    summary: "list users' permissions in a vhost",
    min: 0,
    max: 0,
    async run(ctx) {
      const rows = await list(ctx, ['vhosts', ctx.vhost, 'permissions']);
      printList(ctx, `Listing permissions for vhost "${ctx.vhost}" ...`, rows, PERMISSION_COLUMNS);
    },
  },
  add_user: {
    usage: 'name password',
    summary: 'create a user (no tags, no permissions); refused if it exists',
    min: 2,
    max: 2,
    async run(ctx, args) {
      const name = arg(args, 0);
      announce(ctx, `Adding user "${name}" ...`);
      const exists = await ctx.request('GET', ['users', name]).then(
        () => true,
        (err: unknown) => {
          if (err instanceof NodeRefusedError && err.status === 404) return false;
          throw err;
        },
      );
      if (exists) throw new NodeRefusedError(400, `user '${name}' already exists`);
      await ctx.request('PUT', ['users', name], { password: arg(args, 1), tags: [] });
    },
  },
  delete_user: {
    usage: 'name',
    summary: 'delete a user and its permissions',
    min: 1,
    max: 1,
    async run(ctx, args) {
      announce(ctx, `Deleting user "${arg(args, 0)}" ...`);
      await ctx.request('DELETE', ['users', arg(args, 0)]);
    },
  },
  change_password: {
    usage: 'name password',
    summary: "change a user's password",
    min: 2,
    max: 2,
    async run(ctx, args) {
      const name = arg(args, 0);
      announce(ctx, `Changing password for user "${name}" ...`);
      await requireUser(ctx, name);
      await ctx.request('PUT', ['users', name], { password: arg(args, 1) });
    },
  },
  set_user_tags: {
    usage: 'name [tag ...]',
    summary: "replace a user's tags (administrator, policymaker, management, monitoring)",
    min: 1,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const [name, ...tags] = args as [string, ...string[]];
      announce(ctx, `Setting tags for user "${name}" to [${tags.join(', ')}] ...`);
      await requireUser(ctx, name);
      await ctx.request('PUT', ['users', name], { tags });
    },
  },
  add_vhost: {
    usage: 'name',
    summary: 'create a virtual host',
    min: 1,
    max: 1,
    async run(ctx, args) {
      announce(ctx, `Adding vhost "${arg(args, 0)}" ...`);
      await ctx.request('PUT', ['vhosts', arg(args, 0)]);
    },
  },
  delete_vhost: {
    usage: 'name',
    summary:
      'delete a virtual host with all its exchanges, queues (and their messages), bindings and policies',
    min: 1,
    max: 1,
    async run(ctx, args) {
      announce(ctx, `Deleting vhost "${arg(args, 0)}" ...`);
      await ctx.request('DELETE', ['vhosts', arg(args, 0)]);
    },
  },
  set_permissions: {
    usage: '[-p vhost] user conf write read',
    summary: "set a user's configure, write and read regular expressions in a vhost ('' allows nothing)",
    min: 4,
    max: 4,
    async run(ctx, args) {
      const user = arg(args, 0);
      announce(ctx, `Setting permissions for user "${user}" in vhost "${ctx.vhost}" ...`);
      await ctx.request('PUT', ['permissions', ctx.vhost, user], {
        configure: arg(args, 1),
        write: arg(args, 2),
        read: arg(args, 3),
      });
    },
  },
  clear_permissions: {
    usage: '[-p vhost] user',
    summary: "remove a user's permissions in a vhost",
    min: 1,
    max: 1,
    async run(ctx, args) {
      const user = arg(args, 0);
      announce(ctx, `Clearing permissions for user "${user}" in vhost "${ctx.vhost}" ...`);
      await ctx.request('DELETE', ['permissions', ctx.vhost, user]);
    },
  },
  cluster_status: {
    usage: '',
    summary:
      'show the cluster the node belongs to: its members (disk nodes), those this node reaches now ' +
      '(running nodes), the leader of the metadata group, and per member its id, cluster address and ' +
      'role in the metadata group (voter, learner or none). A node started without --cluster-listen is ' +
      'a cluster of one',
    min: 0,
    max: 0,
    async run(ctx) {
      printClusterStatus(ctx, (await ctx.request('GET', ['cluster'])) as ClusterJson);
    },
  },
  join_cluster: {
    usage: 'HOST:PORT',
    summary:
      'make the node (--node) join the cluster that the node listening for cluster peers at HOST:PORT ' +
      "(its --cluster-listen address) belongs to. The node must have clustering enabled and the cluster's " +
      'secret',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const address = arg(args, 0);
      const problem = clusterAddressProblem(address);
      if (problem !== undefined) throw new UsageError(problem);
      announce(ctx, `Clustering node ${ctx.node} with ${address} ...`);
      await ctx.request('POST', ['cluster', 'join'], { address });
    },
  },
  forget_cluster_node: {
    usage: 'NODE',
    summary:
      'remove a member from the cluster for good, named by its node name or id (run it on another ' +
      'member). The forgotten node may never rejoin under that identity: to bring the machine back, ' +
      'start it with an empty data dir',
    min: 1,
    max: 1,
    async run(ctx, args) {
      announce(ctx, `Removing node ${arg(args, 0)} from the cluster ...`);
      await ctx.request('DELETE', ['cluster', 'nodes', arg(args, 0)]);
    },
  },
  ...CONNECTION_COMMANDS,
  ...QUEUE_REPLICA_COMMANDS,
  ...QUEUE_CHECK_COMMANDS,
  ...ALARM_COMMANDS,
  ...FEATURE_FLAG_COMMANDS,
  ...MAINTENANCE_COMMANDS,
  ...EXPLAIN_COMMANDS,
  ...REDRIVE_COMMANDS,
};

export const CTL_USAGE = `Usage: styx ctl <command> [arguments] [options]

Manage a Styx node through its management API, with rabbitmqctl's commands and arguments.

Commands:
${Object.entries(COMMANDS)
  .map(([name, spec]) => `  ${name} ${spec.usage}`.trimEnd())
  .join('\n')}

${GLOBAL_OPTIONS}

Exit codes: 0 done, 1 refused by the node or a check failed, 2 bad usage, 3 a check could not
compare (check_queue[s]: replicas never at one applied index), 69 node not reachable, 75 timed out.`;

/** How many arguments a command takes: '1 argument', '0 or more arguments', 'at most 1 argument'. */
function arity(spec: CommandSpec): string {
  const plural = (n: number): string => `${n} argument${n === 1 ? '' : 's'}`;
  if (spec.min === spec.max) return plural(spec.min);
  if (spec.max === Number.POSITIVE_INFINITY) return `${spec.min} or more arguments`;
  return spec.min === 0 ? `at most ${plural(spec.max)}` : `${spec.min} to ${spec.max} arguments`;
}

function commandUsage(name: string, spec: CommandSpec): string {
  const extra = (spec.options ?? []).map((option) => `\n${COMMAND_OPTIONS[option]}`).join('');
  return `${`Usage: styx ctl ${name} ${spec.usage}`.trimEnd()}\n\n${spec.summary}\n\n${GLOBAL_OPTIONS}${extra}`;
}

// ---------------------------------------------------------------------------------- http

function unreachableReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return (err as Error).message;
}

/**
 * How fetch reaches an https node whose certificate a private CA signed (`--cacert`): an undici
 * Agent trusting that CA, given to fetch as its dispatcher; undefined: fetch's default.
 */
async function tlsDispatcher(cacert: string | undefined, cwd: string): Promise<Agent | undefined> {
  if (cacert === undefined || cacert === '') return undefined;
  let ca: string;
  try {
    ca = await readFile(resolve(cwd, cacert), 'utf8');
  } catch (err) {
    throw new UsageError(
      `--cacert: cannot read ${cacert}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  return new Agent({ connect: { ca } });
}

function makeRequest(
  node: string,
  credentials: { user: string; password: string },
  timeoutMs: number,
  dispatcher: Agent | undefined,
): Context['request'] {
  const authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
  return async (method, path, body, options) => {
    const query = options?.query === undefined ? '' : `?${new URLSearchParams(options.query)}`;
    const url = `${node}/api/${path.map(encodeURIComponent).join('/')}${query}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          Authorization: authorization,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...options?.headers,
        },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
        // Node's fetch is undici's and takes its dispatcher; the DOM RequestInit type does not say so.
        ...(dispatcher === undefined ? {} : ({ dispatcher } as RequestInit)),
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') {
        throw new NodeUnreachableError(
          `the node at ${node} did not answer within ${timeoutMs / 1000} s`,
          EXIT_TIMEOUT,
        );
      }
      const reason = unreachableReason(err);
      // OpenSSL's verification codes: the node answered, but with a certificate we do not trust.
      if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(reason)) {
        throw new NodeUnreachableError(
          `the node's TLS certificate at ${node} is not trusted (${reason}): give its CA with --cacert FILE or $STYX_CACERT`,
          EXIT_UNREACHABLE,
        );
      }
      throw new NodeUnreachableError(
        `the node is not reachable at ${node} (${reason}): is it running, with its management API on that address (styx server --management-port)?`,
        EXIT_UNREACHABLE,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new NodeRefusedError(
        response.status,
        `the node at ${node} answered with something that is not JSON`,
      );
    }
    if (response.ok || options?.accept?.includes(response.status)) {
      options?.onHeaders?.(response.headers);
      return parsed;
    }
    const reason = (parsed as { reason?: unknown } | undefined)?.reason;
    let message = typeof reason === 'string' ? reason : `HTTP ${response.status}`;
    if (response.status === 401)
      message = `authentication failed for user '${credentials.user}' at ${node}: ${message}`;
    throw new NodeRefusedError(response.status, message);
  };
}

// ---------------------------------------------------------------------------------- entry point

const OPTIONS = {
  vhost: { type: 'string', short: 'p' },
  node: { type: 'string' },
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  cacert: { type: 'string' },
  formatter: { type: 'string' },
  quiet: { type: 'boolean', short: 'q' },
  silent: { type: 'boolean', short: 's' },
  timeout: { type: 'string', short: 't' },
  help: { type: 'boolean', short: 'h' },
  priority: { type: 'string' },
  'apply-to': { type: 'string' },
  'vhost-pattern': { type: 'string' },
  'queue-pattern': { type: 'string' },
  'to-source': { type: 'boolean' },
  exchange: { type: 'string' },
  'routing-key': { type: 'string' },
  'dry-run': { type: 'boolean' },
  rate: { type: 'string' },
  'max-messages': { type: 'string' },
  reason: { type: 'string' },
  'source-queue': { type: 'string' },
  'older-than-ms': { type: 'string' },
  header: { type: 'string' },
  'no-wait': { type: 'boolean' },
  'if-empty': { type: 'boolean' },
  'if-unused': { type: 'boolean' },
} as const;

function parseNode(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--node must be a URL such as ${DEFAULT_NODE}, got '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`--node must be an http:// or https:// URL, got '${value}'`);
  }
  return value.replace(/\/+$/, '');
}

/** Run `styx ctl` with `argv` (the arguments after 'ctl'); resolves with the exit code. */
export async function ctlCommand(argv: string[], io: CtlIo = processIo): Promise<number> {
  // Known before parsing, so a parse error (an unknown flag) still prints that command's usage.
  let name: string | undefined = argv.find((a) => Object.hasOwn(COMMANDS, a));
  try {
    const { values, positionals } = parse(argv, OPTIONS, true);
    const [command, ...args] = positionals;
    name = command;
    if (command === undefined) {
      io[values.help ? 'stdout' : 'stderr'](`${CTL_USAGE}\n`);
      return values.help ? 0 : EXIT_USAGE;
    }
    const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (spec === undefined) throw new UsageError(`unknown command '${command}'`);
    if (values.help) {
      io.stdout(`${commandUsage(command, spec)}\n`);
      return 0;
    }
    const options: Partial<Record<CommandOption, string>> = {};
    for (const option of Object.keys(COMMAND_OPTIONS) as CommandOption[]) {
      const value = values[option];
      if (value === undefined) continue;
      if (!spec.options?.includes(option)) throw new UsageError(`${command} does not take --${option}`);
      options[option] = String(value);
    }
    if (args.length < spec.min || args.length > spec.max) {
      throw new UsageError(`${command} takes ${arity(spec)}, got ${args.length}`);
    }
    const formatter = values.formatter ?? 'table';
    if (formatter !== 'table' && formatter !== 'json') {
      throw new UsageError(`--formatter must be table or json, got '${formatter}'`);
    }
    const timeoutText = values.timeout ?? String(DEFAULT_TIMEOUT_S);
    if (!/^\d+$/.test(timeoutText) || Number(timeoutText) === 0) {
      throw new UsageError(`--timeout must be a whole number of seconds above 0, got '${timeoutText}'`);
    }
    const choice = await chooseNode({
      node: values.node,
      env: io.env,
      dataDir: values['data-dir'],
      config: values.config,
      cwd: io.cwd ?? process.cwd(),
    });
    const node = parseNode(choice.url);
    if (choice.notice !== undefined) io.stderr(`styx ctl: ${choice.notice}\n`);
    const credentials = {
      user: values.username ?? io.env.STYX_USERNAME ?? 'guest',
      password: values.password ?? io.env.STYX_PASSWORD ?? 'guest',
    };
    const ctx: Context = {
      vhost: values.vhost ?? '/',
      vhostGiven: values.vhost !== undefined,
      node,
      json: formatter === 'json',
      quiet: values.quiet ?? false,
      silent: values.silent ?? false,
      timeoutMs: Number(timeoutText) * 1000,
      options,
      io,
      request: makeRequest(
        node,
        credentials,
        Number(timeoutText) * 1000,
        await tlsDispatcher(values.cacert ?? io.env.STYX_CACERT, io.cwd ?? process.cwd()),
      ),
    };
    await spec.run(ctx, args);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      const spec = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
      const usage = spec === undefined || name === undefined ? CTL_USAGE : commandUsage(name, spec);
      io.stderr(`styx ctl: ${err.message}\n\n${usage}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof ConfigFileError) {
      io.stderr(`styx ctl: ${err.message}\n`);
      return EXIT_USAGE;
    }
    if (err instanceof NodeNotFoundError) {
      io.stderr(`styx ctl: Error: ${err.message}\n`);
      return EXIT_UNREACHABLE;
    }
    if (err instanceof NodeUnreachableError) {
      io.stderr(`styx ctl: Error: ${err.message}\n`);
      return err.exitCode;
    }
    if (err instanceof CheckNotComparedError) {
      io.stderr(`styx ctl: Error: ${err.message}\n`);
      return EXIT_NOT_COMPARED;
    }
    if (err instanceof NodeRefusedError || err instanceof CheckFailedError) {
      io.stderr(`styx ctl: Error: ${err.message}\n`);
      return EXIT_REFUSED;
    }
    throw err;
  }
}
