/**
 * The stand-alone scripts' `--name N` options that take a positive integer: the value, `fallback`
 * when the option is absent, or a usage error through the script's own `fail` (which exits).
 */
export function positiveIntOption(
  value: string | undefined,
  fallback: number,
  name: string,
  fail: (message: string) => never,
): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) fail(`--${name} must be a positive integer, got '${value}'`);
  return n;
}
