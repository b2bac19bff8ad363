import { entryBytes, foldInto } from '../raft/append-merge.ts';
import type { Message } from '../raft/types.ts';
import type { GroupMessage, QuiesceNotice } from './transport.ts';
import { messageBytes } from './transport.ts';

/** Where a group's latest message sits in the outbox, and its entry bytes. */
interface Latest {
  readonly at: number;
  readonly entryBytes: number;
}

/**
 * Everything a host sends one peer in one turn, every group: the batch of the next flush. A group's
 * append that continues its previous one in the batch joins it, and a heartbeat behind an append
 * is dropped (append-merge.ts): however many Readys a group's pipeline took this turn, a follower
 * gets one append from it, carrying every entry, and no heartbeat while entries flow.
 */
export class PeerOutbox {
  readonly messages: GroupMessage[] = [];
  readonly quiesce: QuiesceNotice[] = [];
  /** Estimated bytes (`messageBytes`) of what was pushed, folded or not: the host's memory bound. */
  bytes = 0;
  /** Messages folded into an earlier one (not sent on their own). */
  folded = 0;
  readonly #latest = new Map<string, Latest>();
  readonly #maxMergedBytes: number | undefined;

  constructor(maxMergedBytes?: number) {
    this.#maxMergedBytes = maxMergedBytes;
  }

  get empty(): boolean {
    return this.messages.length === 0 && this.quiesce.length === 0;
  }

  push(groupId: string, m: Message): void {
    this.bytes += messageBytes(m);
    const bytes = entryBytes(m);
    const latest = this.#latest.get(groupId);
    if (latest !== undefined) {
      const prev = (this.messages[latest.at] as GroupMessage).message;
      const folded = foldInto(prev, m, latest.entryBytes, bytes, this.#maxMergedBytes);
      if (folded !== undefined) {
        this.folded++;
        if (folded !== prev) {
          this.messages[latest.at] = { groupId, message: folded };
          this.#latest.set(groupId, { at: latest.at, entryBytes: latest.entryBytes + bytes });
        }
        return;
      }
    }
    this.#latest.set(groupId, { at: this.messages.length, entryBytes: bytes });
    this.messages.push({ groupId, message: m });
  }
}
