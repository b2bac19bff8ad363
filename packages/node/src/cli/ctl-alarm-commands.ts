/**
 * `styx ctl`'s resource alarm and listener checks, after rabbitmq-diagnostics' `alarms`,
 * `check_alarms`, `check_local_alarms`, `check_port_listener` and `check_protocol_listener`, on the
 * management API's health checks (management/health-checks-api.ts). A check exits 0 when it passes
 * and 1 when it fails (what failed on stderr), as a failed rabbitmq-diagnostics check does.
 */
import type { Column, CommandSpec, Context, Row } from './ctl-context.ts';
import { arg, CheckFailedError, field, printList } from './ctl-context.ts';

/** A health check's answer: 200 ok, or 503 failed with the details. */
interface HealthJson {
  readonly status: 'ok' | 'failed';
  readonly reason?: string;
  readonly alarms?: readonly Row[];
  readonly ports?: readonly number[];
  readonly protocols?: readonly string[];
}

/** A failed health check answers 503 with its report: the report is the answer. */
const REPORT_STATUSES = [503];

const ALARM_COLUMNS: readonly Column[] = [field('Node', 'node'), field('Resource', 'resource')];

async function healthCheck(ctx: Context, path: readonly string[]): Promise<HealthJson> {
  return (await ctx.request('GET', ['health', 'checks', ...path], undefined, {
    accept: REPORT_STATUSES,
  })) as HealthJson;
}

/** Print the alarms of an alarm check; throw CheckFailedError (exit 1) when it failed. */
function reportAlarms(ctx: Context, title: string, answer: HealthJson): void {
  if (ctx.json) ctx.io.stdout(`${JSON.stringify(answer, null, 2)}\n`);
  else printList(ctx, title, answer.alarms ?? [], ALARM_COLUMNS);
  if (answer.status !== 'ok') {
    const alarms = (answer.alarms ?? []).map(
      (a) => `  - ${String(a.resource)} alarm on node ${String(a.node)}`,
    );
    throw new CheckFailedError([answer.reason ?? 'the check failed', ...alarms].join('\n'));
  }
}

/** Print a listener check's verdict; throw CheckFailedError (exit 1) when it failed. */
function reportListener(ctx: Context, what: string, answer: HealthJson): void {
  if (ctx.json) ctx.io.stdout(`${JSON.stringify(answer, null, 2)}\n`);
  if (answer.status === 'ok') {
    if (!ctx.json && !ctx.quiet) ctx.io.stdout(`A listener for ${what} is active on the node\n`);
    return;
  }
  const active = answer.ports ?? answer.protocols ?? [];
  throw new CheckFailedError(`No active listener for ${what} (active: ${active.join(', ') || 'none'})`);
}

export const ALARM_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  alarms: {
    usage: '',
    summary:
      'list the resource alarms in effect in the cluster (memory: a node over its memory budget; disk: ' +
      'free disk space below disk_free_limit), each of which blocks publishers on every node',
    min: 0,
    max: 0,
    async run(ctx) {
      const answer = await healthCheck(ctx, ['alarms']);
      if (ctx.json) ctx.io.stdout(`${JSON.stringify(answer.alarms ?? [], null, 2)}\n`);
      else
        printList(
          ctx,
          'Listing the resource alarms in effect in the cluster ...',
          answer.alarms ?? [],
          ALARM_COLUMNS,
        );
    },
  },
  check_alarms: {
    usage: '',
    summary: 'check that no resource alarm is in effect anywhere in the cluster (exits 1 when one is)',
    min: 0,
    max: 0,
    async run(ctx) {
      reportAlarms(
        ctx,
        'Checking for resource alarms in the cluster ...',
        await healthCheck(ctx, ['alarms']),
      );
    },
  },
  check_local_alarms: {
    usage: '',
    summary: 'check that no resource alarm is in effect on the node asked (exits 1 when one is)',
    min: 0,
    max: 0,
    async run(ctx) {
      reportAlarms(
        ctx,
        'Checking for resource alarms on the node ...',
        await healthCheck(ctx, ['local-alarms']),
      );
    },
  },
  check_port_listener: {
    usage: 'PORT',
    summary: 'check that the node has an active listener on PORT (clients, management API or cluster)',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const port = arg(args, 0);
      reportListener(ctx, `port ${port}`, await healthCheck(ctx, ['port-listener', port]));
    },
  },
  check_protocol_listener: {
    usage: 'PROTOCOL',
    summary:
      'check that the node has an active listener for PROTOCOL: styx (clients), http (management API) ' +
      'or clustering (RabbitMQ aliases such as management accepted)',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const protocol = arg(args, 0);
      reportListener(ctx, `protocol ${protocol}`, await healthCheck(ctx, ['protocol-listener', protocol]));
    },
  },
};
