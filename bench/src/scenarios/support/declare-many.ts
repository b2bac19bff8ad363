/** Declaring many queues for a case, a batch at a time (one await per queue would take minutes). */
import type { CaseContext } from '../scenario.ts';

/** Declares sent at once. */
export const DECLARE_BATCH = 50;

/** Declares `count` plain queues (roles q0, q1, ...), reporting progress; resolves with their names. */
export async function declareQueues(ctx: CaseContext, count: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < count; i += DECLARE_BATCH) {
    const batch = Array.from({ length: Math.min(DECLARE_BATCH, count - i) }, (_, k) => `q${i + k}`);
    names.push(...(await Promise.all(batch.map((role) => ctx.declareQueue(role)))));
    ctx.status(`${names.length}/${count} queues declared`);
  }
  return names;
}
