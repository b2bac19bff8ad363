// Trying a list of nodes in order: what connect() does with several URLs, and where a recovering
// connection starts. Pure apart from the `attempt` callback, so it is tested with fakes.
import { NodesUnreachableError, ServerCloseError } from '../errors.ts';
import { ReplyCode } from '../wire/index.ts';

/**
 * True for a server's refusal of the handshake that another attempt cannot fix: 403
 * ACCESS_REFUSED (bad credentials) or 530 NOT_ALLOWED (unknown vhost, no permission). Every node of
 * a cluster shares users and vhosts, so trying the next URL would only repeat it.
 */
export function isRefusal(err: unknown): boolean {
  return (
    err instanceof ServerCloseError &&
    (err.code === ReplyCode.ACCESS_REFUSED || err.code === ReplyCode.NOT_ALLOWED)
  );
}

/** Turns any thrown value into an Error. */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * Calls `attempt` on each of `count` nodes in order (0, 1, …) until one succeeds; resolves with its
 * result and index. Stops at once on an error `isFinal` accepts (by default a refusal, see isRefusal)
 * and rejects with it. When every node
 * failed, rejects with the error itself for a single node, and with NodesUnreachableError (cause:
 * the last error) for several.
 *
 * Example: nodes A, B, C with A down → A's attempt fails, B's succeeds → { value, index: 1 }; C is
 * never tried.
 */
export async function firstReachable<T>(
  count: number,
  attempt: (index: number) => Promise<T>,
  isFinal: (err: Error) => boolean = isRefusal,
): Promise<{ value: T; index: number }> {
  let last: Error = new Error('no URL to connect to');
  for (let index = 0; index < count; index++) {
    try {
      return { value: await attempt(index), index };
    } catch (err) {
      last = asError(err);
      if (isFinal(last)) throw last;
    }
  }
  if (count === 1) throw last;
  throw new NodesUnreachableError(count, last);
}
