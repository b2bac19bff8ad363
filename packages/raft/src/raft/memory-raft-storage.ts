import { invariant } from './errors.ts';
import type { ConfState, Entry, HardState, RaftStorage, Ready, Snapshot } from './types.ts';
import { EMPTY_CONF_STATE } from './types.ts';

const EMPTY_HARD_STATE: HardState = Object.freeze({ term: 0, vote: undefined, commit: 0 });
const EMPTY_DATA = new Uint8Array(0);

/**
 * `RaftStorage` in memory: a snapshot and the entries after it. For tests and the simulator (which
 * keeps one as a replica's "disk"). Entries and snapshots are immutable values shared by reference.
 *
 * Invariant: entries[k].index === snapshot.meta.index + 1 + k.
 */
export class MemoryRaftStorage implements RaftStorage {
  #hardState: HardState = EMPTY_HARD_STATE;
  #snapshot: Snapshot;
  #entries: Entry[] = [];

  /** Empty storage (index 0, term 0), or storage holding `snapshot` (a bootstrap or a restart). */
  constructor(snapshot?: Snapshot) {
    this.#snapshot = snapshot ?? {
      meta: { index: 0, term: 0, confState: EMPTY_CONF_STATE },
      data: EMPTY_DATA,
    };
  }

  /** A storage for a new group: a snapshot at index 1, term 1, holding the initial membership. */
  static bootstrap(confState: ConfState, data: Uint8Array = EMPTY_DATA): MemoryRaftStorage {
    return new MemoryRaftStorage({ meta: { index: 1, term: 1, confState }, data });
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.#hardState, confState: this.#snapshot.meta.confState };
  }

  hardState(): HardState {
    return this.#hardState;
  }

  firstIndex(): number {
    return this.#snapshot.meta.index + 1;
  }

  lastIndex(): number {
    return this.#snapshot.meta.index + this.#entries.length;
  }

  term(index: number): number {
    const snapIndex = this.#snapshot.meta.index;
    if (index === snapIndex) return this.#snapshot.meta.term;
    const entry = this.#entries[index - snapIndex - 1];
    invariant(
      entry !== undefined,
      () => `storage term(${index}) outside [${snapIndex}, ${this.lastIndex()}]`,
    );
    return entry.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const offset = this.#snapshot.meta.index + 1;
    invariant(lo >= offset && hi <= this.lastIndex() + 1, () => `storage entries(${lo}, ${hi}) out of range`);
    const result: Entry[] = [];
    let bytes = 0;
    for (let index = lo; index < hi; index++) {
      const entry = this.#entries[index - offset] as Entry;
      bytes += entry.data.byteLength;
      if (result.length > 0 && bytes > maxBytes) break;
      result.push(entry);
    }
    return result;
  }

  snapshot(): Snapshot {
    return this.#snapshot;
  }

  /** Every stored entry after the snapshot (a copy of the list). */
  allEntries(): Entry[] {
    return this.#entries.slice();
  }

  setHardState(state: HardState): void {
    this.#hardState = state;
  }

  /** Write entries, first deleting every stored entry at or after entries[0].index. */
  append(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first === undefined) return;
    const offset = this.#snapshot.meta.index + 1;
    invariant(first.index >= offset, () => `append at ${first.index} below the snapshot (${offset - 1})`);
    invariant(first.index <= this.lastIndex() + 1, () => `append at ${first.index} leaves a gap`);
    this.#entries.length = first.index - offset;
    for (const entry of entries) this.#entries.push(entry);
  }

  /** Replace everything with a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): void {
    this.#snapshot = snapshot;
    this.#entries = [];
  }

  /**
   * The host cut a snapshot of its state at `index` (<= applied): store it and drop the entries it
   * covers. Entries after `index` stay.
   */
  compact(index: number, data: Uint8Array, confState: ConfState): void {
    const snapIndex = this.#snapshot.meta.index;
    if (index <= snapIndex) return;
    invariant(index <= this.lastIndex(), () => `compact(${index}) past the last index ${this.lastIndex()}`);
    const term = this.term(index);
    this.#entries = this.#entries.slice(index - snapIndex);
    this.#snapshot = { meta: { index, term, confState }, data };
  }

  /** Persist everything a Ready asks to persist (snapshot, entries, hard state), in that order. */
  persist(ready: Ready): void {
    if (ready.snapshot !== undefined) this.applySnapshot(ready.snapshot);
    if (ready.entries.length > 0) this.append(ready.entries);
    if (ready.hardState !== undefined) this.setHardState(ready.hardState);
  }

  /** An independent copy (what a crash leaves on disk). */
  clone(): MemoryRaftStorage {
    const copy = new MemoryRaftStorage(this.#snapshot);
    copy.#hardState = this.#hardState;
    copy.#entries = this.#entries.slice();
    return copy;
  }
}
