import { describe, expect, it } from 'vitest';
import { NodesUnreachableError, ServerCloseError } from '../errors.ts';
import { firstReachable } from './first-reachable.ts';

/** An attempt function over nodes that are up (a value) or down (an error); records the order. */
function nodes(...up: (string | Error)[]): { tried: number[]; attempt: (i: number) => Promise<string> } {
  const tried: number[] = [];
  return {
    tried,
    attempt: async (i) => {
      tried.push(i);
      const node = up[i];
      if (node instanceof Error) throw node;
      return node ?? 'missing';
    },
  };
}

describe('firstReachable', () => {
  it('tries the URLs in order and stops at the first that answers', async () => {
    const { tried, attempt } = nodes(new Error('ECONNREFUSED'), 'b', 'c');
    expect(await firstReachable(3, attempt)).toEqual({ value: 'b', index: 1 });
    expect(tried).toEqual([0, 1]);
  });

  it('rejects with NodesUnreachableError, caused by the last error, when every node is down', async () => {
    const last = new Error('ETIMEDOUT');
    const { tried, attempt } = nodes(new Error('ECONNREFUSED'), last);
    const err = await firstReachable(2, attempt).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NodesUnreachableError);
    expect((err as NodesUnreachableError).attempts).toBe(2);
    expect((err as Error).cause).toBe(last);
    expect(tried).toEqual([0, 1]);
  });

  it('rejects with the error itself for a single URL', async () => {
    const down = new Error('ECONNREFUSED');
    await expect(firstReachable(1, nodes(down).attempt)).rejects.toBe(down);
  });

  it('stops at once on a 403 or 530 refusal', async () => {
    for (const code of [403, 530]) {
      const refusal = new ServerCloseError('refused', code);
      const { tried, attempt } = nodes(refusal, 'b');
      await expect(firstReachable(2, attempt)).rejects.toBe(refusal);
      expect(tried).toEqual([0]);
    }
  });

  it('stops on whatever isFinal accepts', async () => {
    const bug = new Error('setup bug');
    const { tried, attempt } = nodes(bug, 'b');
    await expect(firstReachable(2, attempt, (e) => e === bug)).rejects.toBe(bug);
    expect(tried).toEqual([0]);
  });
});
