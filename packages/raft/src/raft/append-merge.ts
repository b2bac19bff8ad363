import type { Entry, Message } from './types.ts';
import { MessageType } from './types.ts';

/**
 * Folding a leader's messages of one turn to one follower into fewer messages, with the same effect
 * on the follower as receiving them one after the other (Ra and etcd-raft send every entry a
 * follower lacks in one append; a pipelined core that takes several Readys in one turn makes one
 * append per Ready, and the host folds them back together here):
 * - an append that continues the previous one (same term, its previous index is the last index the
 *   previous one carried) joins it: one append with both runs of entries and the later commit — the
 *   follower appends the same entries and commits up to the same index, and its one acknowledgement
 *   frees both in the leader's window (an acknowledgement frees every append ending at or before it);
 * - a heartbeat that follows an append with entries, of the same term and carrying no read request,
 *   is dropped: the append resets the follower's election timer and carries a commit at least as
 *   high (a heartbeat's is bounded by what the follower holds), and its acknowledgement keeps the
 *   leader's view of the follower as fresh as the heartbeat's answer would.
 * Nothing else is folded: a message of any other kind (a vote, a snapshot chunk, a TimeoutNow)
 * between them keeps both where they are.
 */

/**
 * Default bound on the entry bytes one folded append carries: 1 MiB, the core's default
 * `maxSizePerMsg` (an append the core made alone may be larger; folding never makes one larger).
 */
export const DEFAULT_MERGED_APPEND_BYTES = 1024 * 1024;

/** Entry data bytes of `m` (an append's entries). */
export function entryBytes(m: Message): number {
  let bytes = 0;
  for (const entry of m.entries) bytes += entry.data.byteLength;
  return bytes;
}

/**
 * `next` folded into `prev` (the message sent just before it to the same peer, for the same group),
 * or undefined when it must be sent as it is. `prevBytes`/`nextBytes` are their entry bytes; the
 * folded append stays within `maxBytes`.
 */
export function foldInto(
  prev: Message,
  next: Message,
  prevBytes: number,
  nextBytes: number,
  maxBytes: number = DEFAULT_MERGED_APPEND_BYTES,
): Message | undefined {
  if (prev.type !== MessageType.App || prev.term !== next.term || prev.snapshot !== undefined)
    return undefined;
  if (prev.from !== next.from || prev.to !== next.to) return undefined;
  const prevEntries = prev.entries;
  const last = prevEntries[prevEntries.length - 1];
  if (next.type === MessageType.Heartbeat) {
    return last !== undefined && next.context === '' && next.commit <= prev.commit ? prev : undefined;
  }
  if (next.type !== MessageType.App || next.snapshot !== undefined || next.context !== prev.context) {
    return undefined;
  }
  const lastIndex = last === undefined ? prev.index : last.index;
  const lastTerm = last === undefined ? prev.logTerm : last.term;
  if (next.index !== lastIndex || next.logTerm !== lastTerm) return undefined;
  if (next.entries.length > 0 && prevEntries.length > 0 && prevBytes + nextBytes > maxBytes) return undefined;
  const entries: readonly Entry[] =
    next.entries.length === 0
      ? prevEntries
      : prevEntries.length === 0
        ? next.entries
        : [...prevEntries, ...next.entries];
  return { ...prev, entries, commit: Math.max(prev.commit, next.commit) };
}
