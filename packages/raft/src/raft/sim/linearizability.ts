/**
 * A linearizability checker for register histories, after Porcupine (Athalye) and the algorithm of
 * Lowe / Wing & Gong it implements: walk the history's call/return events in time order, try to
 * linearize each pending call (step the model), backtrack when a return comes before its call was
 * linearized, and memoize (set of linearized ops, model state) pairs already explored so the search
 * is not exponential on typical histories. Histories are checked per key (P-compositionality:
 * a history of independent registers is linearizable iff each key's is).
 *
 * Times are strictly ordered integers. An operation whose outcome is unknown (a write whose client
 * timed out) has `returnTime` = +Infinity: it may take effect at any point after its call.
 */

export interface RegisterOp {
  readonly kind: 'write' | 'read';
  /** Written value, or the value the read returned. */
  readonly value: number;
  readonly callTime: number;
  readonly returnTime: number;
  /** For reporting. */
  readonly id: number;
}

interface HistoryEvent {
  readonly op: number;
  readonly isCall: boolean;
  readonly time: number;
  prev: HistoryEvent | undefined;
  next: HistoryEvent | undefined;
  /** Call: its return event. */
  match: HistoryEvent | undefined;
}

export interface LinearizabilityResult {
  readonly ok: boolean;
  /** Explored (linearized set, state) pairs; a measure of the search's cost. */
  readonly explored: number;
  /** Set when the search hit `maxExplored` before deciding (treated as unknown, not a violation). */
  readonly gaveUp: boolean;
}

/** Check one register's history. The register starts at `initial`. */
export function checkRegister(
  ops: readonly RegisterOp[],
  initial = 0,
  maxExplored = 2_000_000,
): LinearizabilityResult {
  const n = ops.length;
  if (n === 0) return { ok: true, explored: 0, gaveUp: false };
  const events: HistoryEvent[] = [];
  for (let i = 0; i < n; i++) {
    const op = ops[i] as RegisterOp;
    const call: HistoryEvent = {
      op: i,
      isCall: true,
      time: op.callTime,
      prev: undefined,
      next: undefined,
      match: undefined,
    };
    const ret: HistoryEvent = {
      op: i,
      isCall: false,
      time: op.returnTime,
      prev: undefined,
      next: undefined,
      match: undefined,
    };
    call.match = ret;
    events.push(call, ret);
  }
  // Time order; at equal times calls first (the more permissive order: overlapping ops).
  events.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? a.op - b.op : a.isCall ? -1 : 1));
  const head: HistoryEvent = {
    op: -1,
    isCall: false,
    time: -1,
    prev: undefined,
    next: undefined,
    match: undefined,
  };
  let prev = head;
  for (const event of events) {
    prev.next = event;
    event.prev = prev;
    prev = event;
  }

  const words = Math.ceil(n / 32);
  const linearized = new Uint32Array(words);
  const cache = new Map<string, true>();
  const stack: { event: HistoryEvent; state: number }[] = [];
  let state = initial;
  let entry = head.next;
  let explored = 0;

  const lift = (call: HistoryEvent): void => {
    (call.prev as HistoryEvent).next = call.next;
    if (call.next !== undefined) call.next.prev = call.prev;
    const ret = call.match as HistoryEvent;
    (ret.prev as HistoryEvent).next = ret.next;
    if (ret.next !== undefined) ret.next.prev = ret.prev;
  };
  const unlift = (call: HistoryEvent): void => {
    const ret = call.match as HistoryEvent;
    (ret.prev as HistoryEvent).next = ret;
    if (ret.next !== undefined) ret.next.prev = ret;
    (call.prev as HistoryEvent).next = call;
    if (call.next !== undefined) call.next.prev = call;
  };

  while (head.next !== undefined) {
    if (entry === undefined) break;
    if (entry.isCall) {
      const op = ops[entry.op] as RegisterOp;
      let ok: boolean;
      let nextState: number;
      if (op.kind === 'write') {
        ok = true;
        nextState = op.value;
      } else {
        ok = op.value === state;
        nextState = state;
      }
      if (ok) {
        const word = entry.op >>> 5;
        const bit = 1 << (entry.op & 31);
        linearized[word] = (linearized[word] as number) | bit;
        const key = `${nextState}:${linearized.join(',')}`;
        if (!cache.has(key)) {
          cache.set(key, true);
          explored++;
          if (explored > maxExplored) return { ok: true, explored, gaveUp: true };
          stack.push({ event: entry, state });
          state = nextState;
          lift(entry);
          entry = head.next;
          continue;
        }
        linearized[word] = (linearized[word] as number) & ~bit;
      }
      entry = entry.next;
    } else {
      // A return whose call is not linearized yet: undo the last choice.
      const top = stack.pop();
      if (top === undefined) return { ok: false, explored, gaveUp: false };
      state = top.state;
      const word = top.event.op >>> 5;
      linearized[word] = (linearized[word] as number) & ~(1 << (top.event.op & 31));
      unlift(top.event);
      entry = top.event.next;
    }
  }
  return { ok: true, explored, gaveUp: false };
}
