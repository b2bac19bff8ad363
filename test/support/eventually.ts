/**
 * Poll `check` until it holds, for at most `ms` (a bound against a hang, not a timing assertion);
 * a check that throws counts as not yet, and the last error is in the timeout's message.
 */
export async function eventually(
  what: string,
  check: () => Promise<boolean>,
  ms = 30_000,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${last !== undefined ? `: ${String(last)}` : ''}`);
}
