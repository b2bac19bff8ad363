import type { PeerBatch } from '@styx/raft';

/** A one-heartbeat batch from `from` carrying `seq` as its commit index: a small, valid Raft frame. */
export function heartbeatBatch(from: string, seq: number): PeerBatch {
  return {
    from,
    messages: [
      {
        groupId: 'g',
        message: {
          type: 8, // Heartbeat
          from,
          to: 'x',
          term: 1,
          logTerm: 0,
          index: 0,
          entries: [],
          commit: seq,
          reject: false,
          rejectHint: 0,
          context: '',
          snapshot: undefined,
        },
      },
    ],
    quiesce: [],
  };
}
