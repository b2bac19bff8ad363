/**
 * A call's timeout that does not blame the peer for this process's own lateness.
 *
 * A plain timer fires in the timers phase of the event loop, BEFORE the poll phase that reads the
 * sockets. When this process was busy (a node catching up thousands of Raft groups after a restart
 * ran 1–3 s late), a 1 s ping timer fires as soon as the loop comes round, while the answer, sent in
 * time, waits unread in the socket buffer: the node timed out its own pings, suspected healthy
 * peers and dropped their connections, cutting every queue link through them.
 *
 * So when the timer fires later than asked by more than `LATE_TOLERANCE_MS`, the time lost is given
 * back (the deadline moves by how late the timer ran, never past `maxMs` after the start), and the
 * timeout is decided only after one more poll phase (`setImmediate` runs after it): an answer that
 * is already there wins. A peer that is really silent still times out: after `ms` of this process
 * running on time, or at `maxMs` at the latest.
 */

/** Lateness of a timer that is ordinary jitter, not a busy process, ms. */
export const LATE_TOLERANCE_MS = 50;

export interface LagTolerantTimeout {
  readonly signal: AbortSignal;
  /** Stop the timer (the call settled): the signal never aborts after this. */
  clear(): void;
}

/**
 * A signal that aborts (with a `TimeoutError` DOMException, as `AbortSignal.timeout`) once `ms` have
 * passed with this process running on time, and a poll phase since found nothing to stop it; at
 * the latest `maxMs` (default 4 × `ms`) after the start.
 */
export function lagTolerantTimeout(ms: number, maxMs = 4 * ms): LagTolerantTimeout {
  const controller = new AbortController();
  const start = performance.now();
  let due = start + ms;
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  let cleared = false;
  const abort = (): void => {
    immediate = undefined;
    if (!cleared) controller.abort(new DOMException('The operation timed out.', 'TimeoutError'));
  };
  const fire = (): void => {
    timer = undefined;
    const now = performance.now();
    const late = now - due;
    const limit = start + maxMs;
    if (late > LATE_TOLERANCE_MS && now < limit) {
      due = Math.min(now + late, limit);
      timer = setTimeout(fire, due - now);
      timer.unref();
      return;
    }
    immediate = setImmediate(abort);
  };
  timer = setTimeout(fire, ms);
  timer.unref();
  return {
    signal: controller.signal,
    clear(): void {
      cleared = true;
      if (timer !== undefined) clearTimeout(timer);
      if (immediate !== undefined) clearImmediate(immediate);
      timer = undefined;
      immediate = undefined;
    },
  };
}
