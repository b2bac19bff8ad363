import type { ConfState, NodeId } from '../raft/types.ts';
import type { LogStore } from '../storage/log-store.ts';
import { encodeCommandEntry, encodeSnapshotData, toStoredSnapshot } from './group-codec.ts';

/**
 * How a group's data sits in the log store when a replica opens:
 * - `raft`: written by a Raft group (it always has a hard state, stored with its bootstrap);
 * - `empty`: nothing stored (a new group, or one destroyed before);
 * - `single-voter`: entries and/or a snapshot but no hard state — written by `SingleVoterLog`
 *   (same log store keys; payloads are bare commands and the snapshot is bare machine state).
 */
export type StoredGroupFormat = 'raft' | 'empty' | 'single-voter';

export function storedGroupFormat(store: LogStore, groupId: string): StoredGroupFormat {
  if (store.hardState(groupId) !== undefined) return 'raft';
  if (store.snapshot(groupId) === undefined && store.lastIndex(groupId) === 0) return 'empty';
  return 'single-voter';
}

/** The membership of a group whose only voter is `nodeId`. */
export function singleVoter(nodeId: NodeId): ConfState {
  return { voters: [nodeId], votersOutgoing: [], learners: [], learnersNext: [], autoLeave: false };
}

/**
 * Queue a new group's initial state: a snapshot at index 0 (term 0) holding the membership and no
 * machine state, and a zero hard state. Every replica of a group bootstraps with the same
 * membership, so their logs agree from the start. Returns the batch's promise.
 */
export function bootstrapGroup(store: LogStore, groupId: string, confState: ConfState): Promise<void> {
  const data = encodeSnapshotData({ appIndex: 0, ts: 0, machine: undefined });
  const stored = toStoredSnapshot({ meta: { index: 0, term: 0, confState }, data });
  store.putSnapshot(groupId, stored.meta, stored.data).catch(() => {}); // same batch as the return
  return store.setHardState(groupId, { term: 0, vote: undefined, commit: 0 });
}

/**
 * Rewrite a group written by `SingleVoterLog` into the Raft group format, in one batch, keeping
 * every index: a single voter's entries are all committed, its indexes count commands only (as
 * the group's application index does), and its snapshot index is its applied index. So the machine
 * replays exactly what it replayed before, with the same metas. Returns the batch's promise.
 */
export function migrateSingleVoterGroup(store: LogStore, groupId: string, nodeId: NodeId): Promise<void> {
  const legacy = store.snapshot(groupId);
  const confState = singleVoter(nodeId);
  const snapIndex = legacy?.meta.index ?? 0;
  const snapTerm = legacy?.meta.term ?? 0;
  const data = encodeSnapshotData({
    appIndex: snapIndex,
    ts: legacy?.meta.ts ?? 0,
    machine: legacy?.data,
  });
  const snapshot = toStoredSnapshot({ meta: { index: snapIndex, term: snapTerm, confState }, data });
  // Read everything before queuing anything: the writes below replace these entries in place.
  const entries = [...store.entries(groupId, snapIndex + 1)];
  // Every write below joins one batch; the promise returned (the last write's) reports its fate.
  store.putSnapshot(groupId, snapshot.meta, snapshot.data).catch(() => {});
  store.truncateBefore(groupId, snapIndex + 1).catch(() => {});
  let term = Math.max(1, snapTerm);
  let last = snapIndex;
  for (const entry of entries) {
    const payload = encodeCommandEntry(entry.ts, entry.payload);
    store.append(groupId, { index: entry.index, term: entry.term, ts: entry.ts }, payload).catch(() => {});
    term = Math.max(term, entry.term);
    last = entry.index;
  }
  return store.setHardState(groupId, { term, vote: nodeId, commit: last });
}
