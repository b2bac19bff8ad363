/**
 * `styx ctl`'s queue consistency checks, after rabbitmq-diagnostics' checks: check_queue and
 * check_queues, on the management API's check endpoints (management/queue-checks-api.ts). Each
 * prints a table of the replicas the node compared and exits 0 when they are consistent, 1 when
 * not (the problems are printed on stderr), as a failed rabbitmq-diagnostics check does, and 3 when
 * nothing was found wrong but some replicas could not be compared (never at one applied index while
 * asked: a queue in use); a mismatch anywhere wins over that (1).
 */
import type { Column, CommandSpec, Context, Row } from './ctl-context.ts';
import { arg, CheckFailedError, CheckNotComparedError, field, printList } from './ctl-context.ts';

/** A queue's check as queue-checks-api.ts answers it. */
interface QueueCheckJson {
  readonly vhost: string;
  readonly name: string;
  readonly ok: boolean;
  /** 'ok' | 'failed' | 'not_compared' (absent from a node before it: read `ok` alone then). */
  readonly status?: string;
  readonly problems: readonly string[];
  readonly attempts?: number;
  /** `not_compared`: why. */
  readonly reason?: string;
  readonly replicas: readonly Row[];
}

/** A failed check answers 503 with its report: the report is the answer. */
const REPORT_STATUSES = [503];

/** quorum_status's column names where they are the same fields, then the check's own. */
const REPLICA_COLUMNS: readonly Column[] = [
  field('Node Name', 'node'),
  field('Online', 'online'),
  field('Raft State', 'role'),
  field('Term', 'term'),
  field('Applied Index', 'applied_index'),
  field('Commit Index', 'commit_index'),
  field('Messages', 'messages'),
  field('Live Ids', 'live_ids'),
  field('Digest', 'digest'),
  field('Missing Bodies', 'missing_bodies'),
  field('Error', 'error'),
];

const QUEUE_COLUMNS: readonly Column[] = [
  field('Vhost', 'vhost'),
  field('Queue', 'queue'),
  ...REPLICA_COLUMNS,
];

/** `--formatter json` prints the node's answer as it is. */
function printJson(ctx: Context, body: unknown): void {
  ctx.io.stdout(`${JSON.stringify(body, null, 2)}\n`);
}

/** Whether a queue's replicas were left uncompared (and nothing found wrong). */
function notCompared(q: QueueCheckJson): boolean {
  return q.status === 'not_compared';
}

/**
 * Why the check did not pass, or undefined when it did: every problem of every queue that failed,
 * one per line (exit 1); else every queue not compared and why (exit 3).
 */
function verdict(queues: readonly QueueCheckJson[]): Error | undefined {
  const failed = queues.filter((q) => !q.ok && !notCompared(q));
  if (failed.length > 0) {
    const lines = failed.flatMap((q) => [
      `queue ${q.name} in vhost ${q.vhost} is not consistent:`,
      ...q.problems.map((p) => `  - ${p}`),
    ]);
    return new CheckFailedError(lines.join('\n'));
  }
  const uncompared = queues.filter(notCompared);
  if (uncompared.length === 0) return undefined;
  const lines = uncompared.map(
    (q) => `queue ${q.name} in vhost ${q.vhost} was not compared: ${q.reason ?? 'no reason given'}`,
  );
  lines.push('(nothing was found wrong; check again once the queue(s) are idle)');
  return new CheckNotComparedError(lines.join('\n'));
}

export const QUEUE_CHECK_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  check_queue: {
    usage: '[-p vhost] QUEUE',
    summary:
      "check that a durable queue's replicas are consistent: each member node reports its replica (Raft " +
      'state, term, applied and commit index, message count, a digest of the live message ids, live ' +
      'messages whose body is missing from its store). Exits 1 when a replica is missing bodies, replicas ' +
      'at the same applied index disagree, or a replica could not be checked (its node did not answer); ' +
      'exits 3 when nothing was found wrong but a replica was never at the applied index of another ' +
      'while asked (a queue in use), so it was not compared',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const queue = arg(args, 0);
      const report = (await ctx.request('GET', ['checks', 'queues', ctx.vhost, queue], undefined, {
        accept: REPORT_STATUSES,
      })) as QueueCheckJson;
      if (ctx.json) printJson(ctx, report);
      else {
        printList(
          ctx,
          `Checking the replicas of queue ${queue} in vhost ${ctx.vhost} ...`,
          report.replicas,
          REPLICA_COLUMNS,
        );
      }
      const failed = verdict([report]);
      if (failed !== undefined) throw failed;
    },
  },
  check_queues: {
    usage: '[-p vhost]',
    summary:
      'run check_queue on every durable queue (of the vhost given with -p; of every vhost without it), one ' +
      'table row per replica. Exits 1 when any queue fails its check, else 3 when any was not compared. ' +
      'Non-durable and exclusive queues have no replicas and are left out',
    min: 0,
    max: 0,
    async run(ctx) {
      const answer = (await ctx.request('GET', ['checks', 'queues'], undefined, {
        accept: REPORT_STATUSES,
        ...(ctx.vhostGiven ? { query: { vhost: ctx.vhost } } : {}),
      })) as { ok: boolean; queues: readonly QueueCheckJson[] };
      if (ctx.json) printJson(ctx, answer);
      else {
        const rows = answer.queues.flatMap((q) =>
          q.replicas.map((replica) => ({ vhost: q.vhost, queue: q.name, ...replica })),
        );
        const scope = ctx.vhostGiven ? `in vhost ${ctx.vhost}` : 'in every vhost';
        printList(
          ctx,
          `Checking the replicas of ${answer.queues.length} queue(s) ${scope} ...`,
          rows,
          QUEUE_COLUMNS,
        );
      }
      const failed = verdict(answer.queues);
      if (failed !== undefined) throw failed;
    },
  },
};
