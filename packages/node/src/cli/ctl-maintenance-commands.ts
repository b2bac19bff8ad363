/**
 * `styx ctl`'s maintenance verbs for rolling restarts, after rabbitmq-upgrade's and
 * rabbitmq-queues': drain and revive (maintenance mode), check_if_node_is_quorum_critical and
 * await_online_quorum_plus_one, on the management API's maintenance endpoints
 * (management/maintenance-api.ts). A node is the one whose API `--node` names unless a NODE
 * argument (a member's name or id) names another; the checks then use the answering node's view.
 *
 * Exit codes: drain exits 1 when some leaderships had not moved within --timeout (the node stays
 * drained); check_if_node_is_quorum_critical exits 1 when the node is critical (the groups are
 * listed); await_online_quorum_plus_one exits 1 when --timeout passed first.
 */
import type { Column, CommandSpec, Context, Row } from './ctl-context.ts';
import { announce, CheckFailedError, field, printList } from './ctl-context.ts';

/** A failed health check answers 503 with its report: the report is the answer. */
const REPORT_STATUSES = [503];

/** How often await_online_quorum_plus_one asks again, ms. */
const AWAIT_POLL_MS = 1_000;

/** Seconds the node's drain wait leaves before the request's own timeout, for the reply to arrive. */
const DRAIN_REPLY_MARGIN_S = 2;

const GROUP_COLUMNS: readonly Column[] = [
  field('type'),
  field('vhost'),
  field('name'),
  field('members'),
  field('online'),
  field('online_count'),
  field('needed'),
];

interface DrainJson {
  readonly node: string;
  readonly being_drained: boolean;
  readonly leaders_remaining: readonly string[];
  readonly leaders_kept: readonly string[];
}

interface QuorumCriticalJson {
  readonly status: 'ok' | 'failed';
  readonly node: string;
  readonly reason?: string;
  readonly queues?: readonly Row[];
  readonly metadata_group?: Row | null;
}

interface QuorumPlusOneJson {
  readonly status: 'ok' | 'failed';
  readonly reason?: string;
  readonly groups: readonly Row[];
}

/** The node a command is about: its NODE argument, or the node answering (GET /api/cluster). */
async function targetNode(ctx: Context, args: readonly string[]): Promise<string> {
  const named = args[0];
  if (named !== undefined) return named;
  const cluster = (await ctx.request('GET', ['cluster'])) as { self: { name: string } };
  return cluster.self.name;
}

function printJson(ctx: Context, body: unknown): void {
  ctx.io.stdout(`${JSON.stringify(body, null, 2)}\n`);
}

/** "queue 'q' in vhost '/' (2/3 online, needs 3)" for a progress or failure line. */
function groupLine(row: Row): string {
  const what = row.type === 'metadata' ? 'the metadata group' : `queue '${row.name}' in vhost '${row.vhost}'`;
  return `${what} (${row.online_count}/${(row.members as unknown[]).length} online, needs ${row.needed})`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export const MAINTENANCE_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  drain: {
    usage: '[NODE]',
    summary:
      'put a node into maintenance mode (default: the node --node names): it hands every queue and ' +
      'metadata leadership it holds to other replicas, closes its client connections (320 ' +
      'CONNECTION_FORCED, so clients reconnect elsewhere), refuses new ones, and stays a voter. It stays ' +
      'drained across restarts until revive. Waits up to --timeout for the leaderships to move; exits 1 ' +
      'if some did not (groups with no other replica online stay led by the node and are listed)',
    min: 0,
    max: 1,
    async run(ctx, args) {
      const node = await targetNode(ctx, args);
      announce(ctx, `Will put node ${node} into maintenance mode ...`);
      const waitS = Math.max(1, Math.floor(ctx.timeoutMs / 1000) - DRAIN_REPLY_MARGIN_S);
      const answer = (await ctx.request('POST', ['nodes', node, 'drain'], undefined, {
        query: { timeout: String(waitS) },
      })) as DrainJson;
      if (ctx.json) printJson(ctx, answer);
      else {
        for (const label of answer.leaders_kept)
          announce(ctx, `Still leading ${label}: no other replica is online to take it`);
        if (answer.leaders_remaining.length === 0)
          announce(ctx, `Node ${answer.node} is now in maintenance mode`);
      }
      if (answer.leaders_remaining.length > 0) {
        throw new CheckFailedError(
          `node ${answer.node} is drained but still leads ${answer.leaders_remaining.length} group(s) after ` +
            `${waitS} s: ${answer.leaders_remaining.join(', ')}`,
        );
      }
    },
  },
  revive: {
    usage: '[NODE]',
    summary:
      'take a node out of maintenance mode (default: the node --node names; any member can revive a ' +
      'stopped one): it accepts clients again and may lead again (a later rebalance evens leaders out)',
    min: 0,
    max: 1,
    async run(ctx, args) {
      const node = await targetNode(ctx, args);
      announce(ctx, `Will take node ${node} out of maintenance mode ...`);
      const answer = await ctx.request('POST', ['nodes', node, 'revive']);
      if (ctx.json) printJson(ctx, answer);
    },
  },
  check_if_node_is_quorum_critical: {
    usage: '[NODE]',
    summary:
      'check whether stopping a node (default: the node --node names) would leave a queue or the metadata ' +
      'group without a quorum of online members. Exits 1 and lists them when it would',
    min: 0,
    max: 1,
    async run(ctx, args) {
      const query = args[0] === undefined ? undefined : { node: args[0] };
      const report = (await ctx.request('GET', ['health', 'checks', 'node-is-quorum-critical'], undefined, {
        accept: REPORT_STATUSES,
        ...(query === undefined ? {} : { query }),
      })) as QuorumCriticalJson;
      if (ctx.json) printJson(ctx, report);
      else if (report.status === 'ok') {
        announce(ctx, `Node ${report.node} is not quorum critical: it can be stopped`);
      } else {
        const rows = [...(report.queues ?? []), ...(report.metadata_group ? [report.metadata_group] : [])];
        printList(
          ctx,
          `Groups that would lose their quorum if node ${report.node} stopped:`,
          rows,
          GROUP_COLUMNS,
        );
      }
      if (report.status !== 'ok') {
        const groups = [...(report.queues ?? []), ...(report.metadata_group ? [report.metadata_group] : [])];
        const lines = [
          report.reason ?? `node ${report.node} is quorum critical`,
          ...groups.map((g) => `  - ${groupLine(g)}`),
        ];
        throw new CheckFailedError(lines.join('\n'));
      }
    },
  },
  await_online_quorum_plus_one: {
    usage: '',
    summary:
      'wait until every queue and the metadata group have at least a quorum plus one members online ' +
      '(groups of one or two voters: all of them), so that any one node may stop; prints a progress line ' +
      'while waiting. Exits 1 when --timeout passes first',
    min: 0,
    max: 0,
    async run(ctx) {
      const deadline = performance.now() + ctx.timeoutMs;
      announce(
        ctx,
        'Will wait for a quorum + 1 of members to be online for every queue and the metadata group ...',
      );
      let last = '';
      for (;;) {
        const report = (await ctx.request('GET', ['health', 'checks', 'quorum-plus-one-online'], undefined, {
          accept: REPORT_STATUSES,
        })) as QuorumPlusOneJson;
        if (report.status === 'ok') {
          if (ctx.json) printJson(ctx, report);
          else announce(ctx, 'Every queue and the metadata group have a quorum + 1 of members online');
          return;
        }
        const line = `Waiting for ${report.groups.length} group(s): ${report.groups.map(groupLine).join(', ')}`;
        if (line !== last && !ctx.json) announce(ctx, line);
        last = line;
        if (performance.now() + AWAIT_POLL_MS > deadline) {
          if (ctx.json) printJson(ctx, report);
          throw new CheckFailedError(
            `timed out after ${ctx.timeoutMs / 1000} s; below a quorum + 1 online: ` +
              report.groups.map(groupLine).join(', '),
          );
        }
        await sleep(AWAIT_POLL_MS);
      }
    },
  },
};
