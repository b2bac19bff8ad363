// The command line of the benchmark scripts that take one optional count (`MESSAGES`) and --help.
// Every argument is read before --help is acted on, so `script.ts 100000 --help` prints the usage
// instead of running the benchmark (and a test can check a documented command's arguments with
// `--help` appended); anything else is a usage error, never silently ignored.

/** What the command line asked for: the usage text, or a run over `count` messages. */
export type CountArgs = { readonly help: true } | { readonly help: false; readonly count: number };

/**
 * Reads `[MESSAGES] [--help]` (a `--` that pnpm passes through is skipped). Returns an error text for
 * bad usage: an unknown option, a second count, a count that is not a positive integer.
 */
export function parseCountArgs(argv: readonly string[], defaultCount: number): CountArgs | { error: string } {
  let help = false;
  let countText: string | undefined;
  for (const arg of argv) {
    if (arg === '--') continue;
    if (arg === '-h' || arg === '--help') help = true;
    else if (arg.startsWith('-')) return { error: `unknown option '${arg}'` };
    else if (countText !== undefined)
      return { error: `one MESSAGES count at most, got '${countText}' and '${arg}'` };
    else countText = arg;
  }
  const count = countText === undefined ? defaultCount : Number(countText);
  if (!Number.isSafeInteger(count) || count < 1)
    return { error: `MESSAGES must be a positive integer, got '${countText}'` };
  return help ? { help: true } : { help: false, count };
}
