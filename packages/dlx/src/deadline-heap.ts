/**
 * A binary min-heap of (time, id) pairs ordered by time, then id: push and pop O(log n), peek O(1),
 * kept in two parallel number arrays so that an operation allocates nothing beyond the arrays' own
 * growth. It holds no notion of staleness: callers that re-schedule an id push it again and skip,
 * when they pop, pairs whose time is no longer the id's (lazy deletion).
 */
export class DeadlineHeap {
  private readonly times: number[] = [];
  private readonly ids: number[] = [];

  get size(): number {
    return this.times.length;
  }

  /** The earliest time, or undefined when empty. */
  peekTime(): number | undefined {
    return this.times[0];
  }

  /** The id of the earliest pair, or undefined when empty. */
  peekId(): number | undefined {
    return this.ids[0];
  }

  push(time: number, id: number): void {
    const times = this.times;
    const ids = this.ids;
    let i = times.length;
    times.push(time);
    ids.push(id);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(time, id, times[parent] as number, ids[parent] as number)) break;
      times[i] = times[parent] as number;
      ids[i] = ids[parent] as number;
      i = parent;
    }
    times[i] = time;
    ids[i] = id;
  }

  /** Removes the earliest pair (see `peekTime`/`peekId` for what it was). */
  pop(): void {
    const times = this.times;
    const ids = this.ids;
    const lastTime = times.pop();
    const lastId = ids.pop();
    const n = times.length;
    if (lastTime === undefined || lastId === undefined || n === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (
        right < n &&
        before(times[right] as number, ids[right] as number, times[left] as number, ids[left] as number)
      ) {
        child = right;
      }
      if (!before(times[child] as number, ids[child] as number, lastTime, lastId)) break;
      times[i] = times[child] as number;
      ids[i] = ids[child] as number;
      i = child;
    }
    times[i] = lastTime;
    ids[i] = lastId;
  }

  clear(): void {
    this.times.length = 0;
    this.ids.length = 0;
  }
}

function before(timeA: number, idA: number, timeB: number, idB: number): boolean {
  return timeA < timeB || (timeA === timeB && idA < idB);
}
