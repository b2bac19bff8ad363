/**
 * What every `styx ctl` command is made of: its spec (usage, arguments, options), the context it
 * runs in (the node's API, output mode), and rabbitmqctl's output (an informational line, then a
 * tab-separated table with a header, or JSON with `--formatter json`). The commands themselves are
 * in ctl-command.ts and, for the replicas of queues, ctl-queue-commands.ts and ctl-check-commands.ts.
 */
import { UsageError } from './args.ts';

/** Where output goes and what the command reads from its environment (tests substitute these). */
export interface CtlIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where relative paths (--data-dir, --config, ./styx-data) start; default: process.cwd(). */
  readonly cwd?: string;
}

/** One object of the management API's JSON. */
export type Row = Readonly<Record<string, unknown>>;

/** Options only some commands take (a command lists them in its spec), with their help lines. */
export const COMMAND_OPTIONS = {
  priority:
    '  --priority N            policy priority, an integer; the highest matching policy applies (default: 0)',
  'apply-to': '  --apply-to KIND         queues, exchanges or all (default: all)',
  'vhost-pattern':
    '  --vhost-pattern REGEX   only queues in vhosts whose name matches it (default: every vhost)',
  'queue-pattern': '  --queue-pattern REGEX   only queues whose name matches it (default: every queue)',
  // redrive (ctl-redrive-commands.ts); flags without a value read 'true'.
  'to-source': '  --to-source             back to the queue each message died in last (x-death)',
  exchange: "  --exchange E            to exchange E ('' is the default exchange), with --routing-key",
  'routing-key': '  --routing-key K         the routing key to publish with to --exchange (default: empty)',
  'dry-run': '  --dry-run               move nothing: show what would move where, and what would stay',
  rate: '  --rate N                at most N messages per second (default: as fast as targets confirm)',
  'max-messages': '  --max-messages N        deal with at most N selected messages',
  reason: '  --reason R              only messages that died last for R (rejected, expired, ...)',
  'source-queue': '  --source-queue Q        only messages that died last in queue Q',
  'older-than-ms': '  --older-than-ms MS      only messages in the queue for at least MS milliseconds',
  header: '  --header NAME:VALUE     only messages whose header NAME reads VALUE',
  'no-wait': '  --no-wait               print the redrive id and return instead of following it',
  // delete_queue (ctl-connection-commands.ts)
  'if-empty': '  --if-empty              delete the queue only if it has no messages',
  'if-unused': '  --if-unused             delete the queue only if it has no consumers',
} as const;

export type CommandOption = keyof typeof COMMAND_OPTIONS;

/** How a request reads its answer (see `Context.request`). */
export interface RequestOptions {
  /** Query string parameters. */
  readonly query?: Readonly<Record<string, string>>;
  /**
   * Error statuses whose JSON body is an answer, not a refusal: a health check answers 503 with
   * its report when it fails.
   */
  readonly accept?: readonly number[];
  /** Extra request headers (close_connection's `X-Reason`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Called with the response's headers of an answer (the members that did not answer a list). */
  readonly onHeaders?: (headers: Headers) => void;
}

/** A check the node ran did not pass (exit 1, as a refusal); the output said why. */
export class CheckFailedError extends Error {
  readonly code = 'CTL_CHECK_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'CheckFailedError';
  }
}

/**
 * A check the node ran found nothing wrong but could not verify everything (exit 3, apart from a
 * failure's 1): check_queue[s] on replicas that were never at one applied index while asked.
 */
export class CheckNotComparedError extends Error {
  readonly code = 'CTL_CHECK_NOT_COMPARED';
  constructor(message: string) {
    super(message);
    this.name = 'CheckNotComparedError';
  }
}

export interface Context {
  /** `-p` or '/'. */
  readonly vhost: string;
  /** Whether `-p` was given (a command over every vhost narrows to it only then). */
  readonly vhostGiven: boolean;
  readonly node: string;
  readonly json: boolean;
  readonly quiet: boolean;
  readonly silent: boolean;
  /** `--timeout` in ms: how long one request may take, and how long a waiting command waits. */
  readonly timeoutMs: number;
  /** The command-specific options given (only those its spec lists get this far). */
  readonly options: Readonly<Partial<Record<CommandOption, string>>>;
  readonly io: CtlIo;
  request(
    method: 'GET' | 'PUT' | 'POST' | 'DELETE',
    path: readonly string[],
    body?: unknown,
    options?: RequestOptions,
  ): Promise<unknown>;
}

export interface CommandSpec {
  /** Arguments after the command name, rabbitmqctl's order. */
  readonly usage: string;
  readonly summary: string;
  /** Positional arguments: exactly `min` to `max`. */
  readonly min: number;
  readonly max: number;
  /** Command-specific options it accepts (beyond the global ones). */
  readonly options?: readonly CommandOption[];
  run(ctx: Context, args: readonly string[]): Promise<void>;
}

export function arg(args: readonly string[], i: number): string {
  return args[i] as string;
}

export async function list(ctx: Context, path: readonly string[]): Promise<Row[]> {
  return (await ctx.request('GET', path)) as Row[];
}

// ---------------------------------------------------------------------------------- output

/** A list column: its name (rabbitmqctl's) and how to read it from the API's JSON. */
export type Column = readonly [name: string, read: (row: Row) => unknown];

export function field(name: string, key = name): Column {
  return [name, (row) => row[key]];
}

export function nested(name: string, key: string, inner: string): Column {
  return [name, (row) => (row[key] as Row | undefined)?.[inner]];
}

/** The columns named in `requested` (or `defaults`), in that order; UsageError for an unknown one. */
export function pickColumns(
  all: readonly Column[],
  requested: readonly string[],
  defaults: readonly string[],
): Column[] {
  const names = requested.length > 0 ? requested : defaults;
  return names.map((name) => {
    const column = all.find(([n]) => n === name);
    if (column === undefined) {
      throw new UsageError(`invalid column '${name}'; valid columns are: ${all.map(([n]) => n).join(', ')}`);
    }
    return column;
  });
}

/**
 * A table cell as rabbitmqctl prints it: strings bare, null/absent empty, lists as [a, b], objects
 * as JSON. (`--formatter json` keeps null and "" apart, e.g. no DLX vs the default exchange.)
 */
export function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return `[${value.join(', ')}]`;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function printList(
  ctx: Context,
  info: string,
  rows: readonly Row[],
  columns: readonly Column[],
): void {
  if (ctx.json) {
    const out = rows.map((row) =>
      Object.fromEntries(columns.map(([name, read]) => [name, read(row) ?? null])),
    );
    ctx.io.stdout(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const lines: string[] = [];
  if (!ctx.quiet && !ctx.silent) lines.push(info);
  if (!ctx.silent) lines.push(columns.map(([name]) => name).join('\t'));
  for (const row of rows) lines.push(columns.map(([, read]) => cell(read(row))).join('\t'));
  ctx.io.stdout(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
}

/** The informational line of an action command (not in json mode, nor with -q / -s). */
export function announce(ctx: Context, info: string): void {
  if (!ctx.json && !ctx.quiet && !ctx.silent) ctx.io.stdout(`${info}\n`);
}
