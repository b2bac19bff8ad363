/**
 * `styx ctl`'s verbs for the replicas of queues, with `rabbitmq-queues`' names and arguments
 * (RabbitMQ 3.10): add_member, delete_member, grow, shrink, rebalance and quorum_status, on the
 * management API's queue replica endpoints (management/queue-replicas-api.ts). A node is named by
 * its node name or id. On a node without clustering the node refuses each of them (exit 1).
 *
 * Membership verbs return once the queue's new member list is committed in the cluster's metadata;
 * the queue's leader then changes its Raft group one step at a time (a new replica joins as a
 * learner and votes once it has caught up), which quorum_status shows.
 */
import { namePatternProblem } from '../metadata/name-pattern.ts';
import { UsageError } from './args.ts';
import type { CommandOption, CommandSpec, Context, Row } from './ctl-context.ts';
import { announce, arg, field, printList } from './ctl-context.ts';

/** `GET /api/queues/{vhost}/{name}/quorum_status` as queue-replicas-api.ts answers it. */
interface QuorumStatusJson {
  readonly leader: string;
  /** Null from a node of an earlier version, which did not report it. */
  readonly term: number | null;
  readonly commit_index: number;
  readonly members: readonly Row[];
}

/** rabbitmq-queues quorum_status's column names, for the replica fields Styx reports. */
const STATUS_COLUMNS = [
  field('Node Name', 'node'),
  field('Raft State', 'role'),
  field('Match Index', 'match_index'),
  field('Online', 'online'),
] as const;

const TRANSFER_COLUMNS = ['vhost', 'name', 'from', 'to'].map((name) => field(name));

/** A pattern option compiled as the node will compile it, so a typo is a usage error here. */
function patternOption(ctx: Context, option: CommandOption): string | undefined {
  const source = ctx.options[option];
  if (source === undefined) return undefined;
  const problem = namePatternProblem(source);
  if (problem !== undefined) {
    throw new UsageError(`--${option} is not a valid regular expression: ${problem.reason}`);
  }
  return source;
}

/** `--formatter json` prints the node's answer as it is; a table prints `lines`. */
function printResult(ctx: Context, body: unknown, lines: readonly string[]): void {
  if (ctx.json) ctx.io.stdout(`${JSON.stringify(body, null, 2)}\n`);
  else if (lines.length > 0) ctx.io.stdout(`${lines.join('\n')}\n`);
}

function queues(count: number): string {
  return `${count} queue${count === 1 ? '' : 's'}`;
}

export const QUEUE_REPLICA_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  add_member: {
    usage: '[-p vhost] QUEUE NODE',
    summary:
      'add a replica of a durable queue on cluster member NODE (its node name or id). The queue leader ' +
      'adds it to its Raft group as a learner and makes it a voter once it has caught up',
    min: 2,
    max: 2,
    async run(ctx, args) {
      const [queue, node] = [arg(args, 0), arg(args, 1)];
      announce(ctx, `Adding a replica for queue ${queue} in vhost ${ctx.vhost} on node ${node} ...`);
      await ctx.request('POST', ['queues', ctx.vhost, queue, 'members'], { node });
    },
  },
  delete_member: {
    usage: '[-p vhost] QUEUE NODE',
    summary:
      "remove a queue's replica on cluster member NODE (its node name or id). Its last replica is " +
      'refused: delete the queue instead. A leader that leaves hands its leadership over first',
    min: 2,
    max: 2,
    async run(ctx, args) {
      const [queue, node] = [arg(args, 0), arg(args, 1)];
      announce(ctx, `Removing a replica for queue ${queue} in vhost ${ctx.vhost} on node ${node} ...`);
      await ctx.request('DELETE', ['queues', ctx.vhost, queue, 'members', node]);
    },
  },
  grow: {
    usage: 'NODE all|even [--vhost-pattern REGEX] [--queue-pattern REGEX]',
    summary:
      'add a replica on cluster member NODE to every durable queue that has none there (all), or only to ' +
      'those with an even number of replicas (even), so each ends with an odd number. Typically run after ' +
      'a node joins',
    min: 2,
    max: 2,
    options: ['vhost-pattern', 'queue-pattern'],
    async run(ctx, args) {
      const [node, strategy] = [arg(args, 0), arg(args, 1)];
      if (strategy !== 'all' && strategy !== 'even') {
        throw new UsageError(`the strategy must be all or even, got '${strategy}'`);
      }
      const vhostPattern = patternOption(ctx, 'vhost-pattern');
      const queuePattern = patternOption(ctx, 'queue-pattern');
      announce(
        ctx,
        `Growing ${strategy === 'all' ? 'all' : 'even-sized'} queues matching vhost pattern ` +
          `"${vhostPattern ?? '.*'}" and queue pattern "${queuePattern ?? '.*'}" ` +
          `to add replicas on node ${node} ...`,
      );
      const body = (await ctx.request('POST', ['queues', 'grow'], {
        node,
        strategy,
        ...(vhostPattern === undefined ? {} : { vhost_pattern: vhostPattern }),
        ...(queuePattern === undefined ? {} : { queue_pattern: queuePattern }),
      })) as { node: string; added: number };
      printResult(ctx, body, [`Added a replica on node ${body.node} to ${queues(body.added)}.`]);
    },
  },
  shrink: {
    usage: 'NODE',
    summary:
      "remove cluster member NODE's replica of every queue, except where it is the last one (those are " +
      'listed and kept). Typically run before a node is decommissioned',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const node = arg(args, 0);
      announce(ctx, `Shrinking all queues on node ${node} ...`);
      const body = (await ctx.request('POST', ['queues', 'shrink'], { node })) as {
        node: string;
        removed: number;
        skipped: readonly { vhost: string; name: string }[];
      };
      printResult(ctx, body, [
        `Removed the replica on node ${body.node} of ${queues(body.removed)}.`,
        ...body.skipped.map(
          (q) => `Kept the replica of queue ${q.name} in vhost ${q.vhost}: it is the last one.`,
        ),
      ]);
    },
  },
  rebalance: {
    usage: '[all|quorum]',
    summary:
      'move queue leaders so the online members lead about as many queues each (a queue only moves to a ' +
      'member that holds one of its replicas), and list the transfers asked for. Every Styx queue is a ' +
      "quorum queue: 'all' and 'quorum' (rabbitmq-queues' type argument) mean the same",
    min: 0,
    max: 1,
    async run(ctx, args) {
      const type = args[0] ?? 'all';
      if (type !== 'all' && type !== 'quorum') {
        throw new UsageError(`the queue type must be all or quorum, got '${type}'`);
      }
      const body = (await ctx.request('POST', ['rebalance', 'queues'])) as { transfers: readonly Row[] };
      printList(ctx, 'Re-balancing leaders of queues ...', body.transfers, TRANSFER_COLUMNS);
    },
  },
  quorum_status: {
    usage: '[-p vhost] QUEUE',
    summary:
      "show a durable queue's Raft group as its leader reports it (its term and commit index): per replica " +
      'its node, Raft state (leader, follower or learner), match index (the last log entry known to be on ' +
      'its disk) and whether the leader heard from it within the last election timeout (online)',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const queue = arg(args, 0);
      const status = (await ctx.request('GET', [
        'queues',
        ctx.vhost,
        queue,
        'quorum_status',
      ])) as QuorumStatusJson;
      if (ctx.json) {
        printResult(ctx, status, []);
        return;
      }
      printList(
        ctx,
        `Status of quorum queue ${queue} in vhost ${ctx.vhost} (leader ${status.leader}, term ` +
          `${status.term ?? 'unknown'}, commit index ${status.commit_index}) ...`,
        status.members,
        STATUS_COLUMNS,
      );
    },
  },
};
