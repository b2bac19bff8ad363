/**
 * `styx ctl`'s redrive verbs, on the management API's redrive endpoints (management/redrive-api.ts):
 *
 *   styx ctl redrive [-p vhost] QUEUE (--to-source | --exchange E --routing-key K) [--dry-run]
 *       [--rate N] [--max-messages N] [--reason R] [--source-queue Q] [--older-than-ms MS]
 *       [--header NAME:VALUE] [--no-wait]
 *   styx ctl list_redrives [-p vhost]
 *   styx ctl cancel_redrive ID
 *
 * `redrive` prints a dry run's plan (messages per destination, reasons some would stay, a sample),
 * or follows a real redrive until it ends with a progress line (moved / remaining / failed), one
 * line per change; exit 0 when it ended done or cancelled, 1
 * when it failed. With --no-wait it prints the redrive's id and returns at once.
 */
import { UsageError } from './args.ts';
import type { CommandSpec, Context, Row } from './ctl-context.ts';
import { announce, arg, CheckFailedError, cell, field, printList } from './ctl-context.ts';

/** How often a followed redrive is polled, ms. */
const POLL_MS = 500;

const LIST_COLUMNS = [
  field('id'),
  field('vhost'),
  field('queue'),
  field('user'),
  field('state'),
  field('dry_run'),
  ['target', (row: Row) => targetText(row.target as Row)] as const,
  field('moved'),
  field('failed'),
  field('remaining'),
  field('node'),
  ['created_at', (row: Row) => new Date(row.created_at as number).toISOString()] as const,
];

function targetText(target: Row): string {
  if (target.kind === 'source') return 'source queues';
  return `exchange '${String(target.exchange)}' key '${String(target.routing_key)}'`;
}

function wholeNumber(option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) === 0)
    throw new UsageError(`--${option} must be a whole number above 0, got '${value}'`);
  return Number(value);
}

/** The POST body from the command's options (the node checks it again and says what is wrong). */
export function redriveBody(options: Context['options']): Record<string, unknown> {
  const toSource = options['to-source'] !== undefined;
  const exchange = options.exchange;
  const routingKey = options['routing-key'];
  if (toSource === (exchange !== undefined))
    throw new UsageError('give either --to-source or --exchange E (with --routing-key K)');
  if (exchange === undefined && routingKey !== undefined)
    throw new UsageError('--routing-key goes with --exchange');
  const filter: Record<string, unknown> = {};
  if (options.reason !== undefined) filter.reason = options.reason;
  if (options['source-queue'] !== undefined) filter.source_queue = options['source-queue'];
  const olderThan = options['older-than-ms'];
  if (olderThan !== undefined) {
    if (!/^\d+$/.test(olderThan))
      throw new UsageError(`--older-than-ms must be a whole number, got '${olderThan}'`);
    filter.older_than_ms = Number(olderThan);
  }
  const header = options.header;
  if (header !== undefined) {
    const at = header.indexOf(':');
    if (at <= 0) throw new UsageError(`--header must be NAME:VALUE, got '${header}'`);
    filter.headers = [{ name: header.slice(0, at), value: header.slice(at + 1) }];
  }
  const rate = options.rate === undefined ? undefined : Number(options.rate);
  if (rate !== undefined && !(rate > 0))
    throw new UsageError(`--rate must be a number above 0, got '${options.rate}'`);
  return {
    target: toSource ? 'source' : { exchange, routing_key: routingKey ?? '' },
    filter,
    dry_run: options['dry-run'] !== undefined,
    ...(rate !== undefined ? { rate } : {}),
    ...(options['max-messages'] !== undefined
      ? { max_messages: wholeNumber('max-messages', options['max-messages']) }
      : {}),
  };
}

function progressLine(record: Row): string {
  const remaining = record.remaining === null ? '?' : String(record.remaining);
  return `${String(record.state)}: moved ${String(record.moved)}, remaining ${remaining}, failed ${String(record.failed)}`;
}

function printPlan(ctx: Context, record: Row): void {
  const lines = [
    `Dry run: ${String(record.would_move)} of ${String(record.total)} selected messages would move, ` +
      `${String(record.would_fail)} would stay`,
  ];
  const targets = record.targets as Row[];
  if (targets.length > 0) {
    lines.push('exchange\trouting_key\tcount');
    for (const row of targets)
      lines.push(`${cell(row.exchange)}\t${cell(row.routing_key)}\t${cell(row.count)}`);
  }
  const failures = record.failures as Row[];
  if (failures.length > 0) {
    lines.push('would stay\tcount');
    for (const row of failures) lines.push(`${cell(row.reason)}\t${cell(row.count)}`);
  }
  const sample = record.sample as Row[];
  if (sample.length > 0) {
    lines.push('sample: id\texchange\trouting_key\tqueues\tfailure');
    for (const row of sample)
      lines.push(
        `${cell(row.id)}\t${cell(row.exchange)}\t${cell(row.routing_key)}\t${cell(row.queues)}\t${cell(row.failure)}`,
      );
  }
  ctx.io.stdout(`${lines.join('\n')}\n`);
}

/** Poll the redrive until it ends, printing its progress line whenever it changes. */
async function follow(ctx: Context, id: string, first: Row): Promise<Row> {
  let record = first;
  let shown = '';
  for (;;) {
    const line = progressLine(record);
    if (line !== shown && !ctx.json && !ctx.silent) {
      ctx.io.stdout(`${line}\n`);
      shown = line;
    }
    if (record.state !== 'running') return record;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    record = (await ctx.request('GET', ['redrives', id])) as Row;
  }
}

export const REDRIVE_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  redrive: {
    usage: '[-p vhost] QUEUE (--to-source | --exchange E [--routing-key K]) [--dry-run] [options]',
    summary:
      'move messages from dead-letter queue QUEUE back to the queue each died in last (--to-source: its ' +
      "x-death's first entry, through the default exchange) or to exchange E with key K, selected by the " +
      'filter options. A message leaves QUEUE only once every queue its target routes it to confirmed it; ' +
      'one routed nowhere or refused stays and is counted failed. --dry-run shows what would move. Without ' +
      '--no-wait, follows the redrive with a progress line until it ends (cancel it with cancel_redrive ID)',
    min: 1,
    max: 1,
    options: [
      'to-source',
      'exchange',
      'routing-key',
      'dry-run',
      'rate',
      'max-messages',
      'reason',
      'source-queue',
      'older-than-ms',
      'header',
      'no-wait',
    ],
    async run(ctx, args) {
      const queue = arg(args, 0);
      const body = redriveBody(ctx.options);
      const record = (await ctx.request('POST', ['queues', ctx.vhost, queue, 'redrive'], body)) as Row;
      const id = String(record.id);
      if (body.dry_run === true) {
        if (ctx.json) ctx.io.stdout(`${JSON.stringify(record, null, 2)}\n`);
        else printPlan(ctx, record);
        return;
      }
      announce(
        ctx,
        `Redriving messages of queue ${queue} in vhost ${ctx.vhost} to ${targetText(record.target as Row)} (redrive ${id}) ...`,
      );
      if (ctx.options['no-wait'] !== undefined) {
        if (ctx.json) ctx.io.stdout(`${JSON.stringify(record, null, 2)}\n`);
        else if (ctx.quiet || ctx.silent) ctx.io.stdout(`${id}\n`);
        return;
      }
      const last = await follow(ctx, id, record);
      if (ctx.json) ctx.io.stdout(`${JSON.stringify(last, null, 2)}\n`);
      if (last.state === 'failed') throw new CheckFailedError(`redrive ${id} failed: ${String(last.error)}`);
    },
  },
  list_redrives: {
    usage: '[-p vhost]',
    summary:
      'list the redrives of every vhost (of vhost with -p), newest first: who started each, on which ' +
      'queue, to where, and how far it got. The cluster keeps the last 1,000',
    min: 0,
    max: 0,
    async run(ctx) {
      const query = ctx.vhostGiven ? { vhost: ctx.vhost } : undefined;
      const rows = (await ctx.request(
        'GET',
        ['redrives'],
        undefined,
        query ? { query } : undefined,
      )) as Row[];
      printList(ctx, 'Listing redrives ...', rows, LIST_COLUMNS);
    },
  },
  cancel_redrive: {
    usage: 'ID',
    summary: 'cancel a running redrive: it stops before its next batch, keeping what it moved so far',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const id = arg(args, 0);
      announce(ctx, `Cancelling redrive ${id} ...`);
      const record = (await ctx.request('DELETE', ['redrives', id])) as Row;
      if (ctx.json) ctx.io.stdout(`${JSON.stringify(record, null, 2)}\n`);
      else if (!ctx.quiet && !ctx.silent) ctx.io.stdout(`${progressLine(record)}\n`);
    },
  },
};
