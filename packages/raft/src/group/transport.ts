import type { Message, NodeId } from '../raft/types.ts';

/**
 * How a `RaftHost` talks to the hosts of its peers: ONE logical connection per peer, carrying
 * batches. A batch holds every message the sending host produced for that peer in one turn, for
 * all of its groups — so the heartbeats of every active group on one tick leave as one send per
 * peer (coalesced), and so do the appends and acknowledgements of one I/O turn.
 *
 * Implementations: `InProcessTransport` (hosts in one process; tests and benchmarks) and, with the
 * cluster, a libp2p protocol stream per peer. Both must honour the same contract:
 * - batches from one sender to one receiver are delivered in order, at most once (a transport may
 *   drop or cut a connection: Raft retries, it never needs exactly-once delivery);
 * - a delivered batch is not aliased by the sender afterwards (a network transport encodes it; the
 *   in-process one hands over objects the sender never touches again);
 * - `send` resolves once the batch has left this node (written to the connection or delivered) and
 *   rejects when the peer cannot be reached; the host counts the bytes of unresolved sends against
 *   its memory bound.
 */
export interface Transport {
  /** This node's id, as its peers address it. */
  readonly nodeId: NodeId;
  /**
   * Writes made to connections so far (a network transport's cost is mostly per write, not per
   * byte: what batching saves shows here); undefined for a transport without connections.
   */
  readonly writes?: number;
  /** Send one batch to `peer`. */
  send(peer: NodeId, batch: PeerBatch): Promise<void>;
  /** Register the receiver of every batch addressed to this node (one receiver; replaces). */
  onReceive(handler: (batch: PeerBatch) => void): void;
  /**
   * Register the listener told when a peer is known to be unreachable (its connection closed, or
   * it stopped answering): the groups that peer leads forget it and elect a new leader. Quiesced
   * followers send and expect nothing, so this word is all that wakes them: a transport must give
   * it whenever a peer it cannot reach leads groups here (the cluster's failure detector does).
   */
  onPeerDown(handler: (peer: NodeId) => void): void;
  /** Stop sending and receiving. */
  close(): Promise<void>;
}

/** One Raft message of one group. */
export interface GroupMessage {
  readonly groupId: string;
  readonly message: Message;
}

/**
 * A leader's notice that it stopped ticking its group because every follower has caught up: the
 * follower commits up to `commit`, stops ticking too and waits to be woken by a message.
 */
export interface QuiesceNotice {
  readonly groupId: string;
  readonly term: number;
  readonly commit: number;
}

/** Everything one host sends one peer in one turn. */
export interface PeerBatch {
  readonly from: NodeId;
  readonly messages: readonly GroupMessage[];
  readonly quiesce: readonly QuiesceNotice[];
}

/** Rough size of a message in bytes for the memory bound: its data plus a fixed header estimate. */
export function messageBytes(m: Message): number {
  let bytes = MESSAGE_OVERHEAD_BYTES;
  for (const entry of m.entries) bytes += entry.data.byteLength + ENTRY_OVERHEAD_BYTES;
  if (m.snapshot !== undefined) bytes += m.snapshot.data.byteLength;
  return bytes;
}

/** Estimated fixed cost of one message (ids, terms, indexes), bytes. */
const MESSAGE_OVERHEAD_BYTES = 64;
/** Estimated fixed cost of one entry in a message (term, index, type), bytes. */
const ENTRY_OVERHEAD_BYTES = 16;
