import type { ParseArgsConfig } from 'node:util';
import { parseArgs } from 'node:util';

/** A command-line mistake: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * `argv` without a `--` in front of everything else. pnpm 10 hands the `--` of
 * `pnpm start -- --port 5690` on to the script, so `styx server` gets `-- --port 5690`: there it
 * separates nothing from nothing and is dropped. A `--` further on keeps its meaning (everything
 * after it is positional), so a stray word or an unknown flag is still a usage error.
 */
export function withoutLeadingSeparator(argv: readonly string[]): string[] {
  return argv[0] === '--' ? argv.slice(1) : [...argv];
}

/**
 * parseArgs with errors turned into UsageError (unknown flags, missing values, stray positionals),
 * after dropping a leading `--` (withoutLeadingSeparator).
 */
export function parse<O extends Options>(args: readonly string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: withoutLeadingSeparator(args), options, allowPositionals, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

export function parseIntegerFlag(
  name: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number, got '${value}'`);
  const n = Number(value);
  if (n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}
