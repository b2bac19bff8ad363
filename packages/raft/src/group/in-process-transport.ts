import type { NodeId } from '../raft/types.ts';
import { PeerUnreachableError } from './errors.ts';
import type { PeerBatch, Transport } from './transport.ts';

/**
 * Decides the fate of one batch in flight (a test's fault hook): true delivers it, false drops it
 * silently, as a lossy network would.
 */
export type BatchFilter = (from: NodeId, to: NodeId, batch: PeerBatch) => boolean;

/**
 * Connects several `RaftHost`s in one process: each `connect(nodeId)` gives a host its
 * `Transport`. Batches are delivered on a later turn of the event loop (never synchronously inside
 * `send`, as no network would), in send order per sender and receiver. For tests: a filter that
 * drops batches, `isolate`, a partition as the cluster's failure detector reports it, and
 * `disconnect`, which cuts a node off both ways and tells its peers it is down.
 */
export class InProcessHub {
  readonly #nodes = new Map<NodeId, InProcessTransport>();
  #filter: BatchFilter | undefined;
  /** The node a partition cuts off (see `isolate`). */
  #isolated: NodeId | undefined;
  /** Batches delivered so far (for tests and benchmarks). */
  delivered = 0;

  /** The transport of `nodeId` (replacing an earlier one of the same id, as a restart does). */
  connect(nodeId: NodeId): InProcessTransport {
    const transport = new InProcessTransport(nodeId, this);
    this.#nodes.set(nodeId, transport);
    return transport;
  }

  /** Install (or remove, with undefined) the fault hook. */
  setFilter(filter: BatchFilter | undefined): void {
    this.#filter = filter;
  }

  /**
   * Partition `nodeId` from every other node (`undefined` heals): batches to and from it are dropped
   * silently, and each side hears the other is down, as the failure detector tells the hosts in a
   * real cluster (a quiesced follower sends nothing and expects nothing: without that word it
   * would wait for its cut-off leader forever). Unlike `disconnect`, the node keeps its transport:
   * a leader on it goes on leading, and sending there fails nothing.
   */
  isolate(nodeId: NodeId | undefined): void {
    this.#isolated = nodeId;
    if (nodeId === undefined) return;
    const cut = this.#nodes.get(nodeId);
    for (const other of this.#nodes.values()) {
      if (other === cut) continue;
      other.peerDown(nodeId);
      cut?.peerDown(other.nodeId);
    }
  }

  /** Cut `nodeId` off: batches to and from it fail, and every other node hears it is down. */
  disconnect(nodeId: NodeId): void {
    const transport = this.#nodes.get(nodeId);
    if (transport === undefined) return;
    this.#nodes.delete(nodeId);
    transport.detach();
    for (const other of this.#nodes.values()) other.peerDown(nodeId);
  }

  /** @internal A transport closed itself: disconnect it unless a newer one took its id. */
  remove(transport: InProcessTransport): void {
    if (this.#nodes.get(transport.nodeId) === transport) this.disconnect(transport.nodeId);
    else transport.detach();
  }

  /** Whether a partition (see `isolate`) lies between `from` and `to`. */
  #partitioned(from: NodeId, to: NodeId): boolean {
    const isolated = this.#isolated;
    return isolated !== undefined && (from === isolated || to === isolated);
  }

  /** @internal Route one batch; called by `InProcessTransport.send`. */
  route(from: InProcessTransport, to: NodeId, batch: PeerBatch): Promise<void> {
    const target = this.#nodes.get(to);
    if (target === undefined || this.#nodes.get(from.nodeId) !== from) {
      return Promise.reject(new PeerUnreachableError(to));
    }
    if (this.#partitioned(from.nodeId, to)) return Promise.resolve();
    const filter = this.#filter;
    if (filter !== undefined && !filter(from.nodeId, to, batch)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        // Still connected when the batch arrives: a node cut off meanwhile loses it.
        if (
          !this.#partitioned(from.nodeId, to) &&
          this.#nodes.get(to) === target &&
          this.#nodes.get(from.nodeId) === from
        ) {
          this.delivered++;
          target.deliver(batch);
        }
        resolve();
      });
    });
  }
}

/** One node's end of an `InProcessHub`. */
export class InProcessTransport implements Transport {
  readonly nodeId: NodeId;
  readonly #hub: InProcessHub;
  #receive: ((batch: PeerBatch) => void) | undefined;
  #peerDown: ((peer: NodeId) => void) | undefined;
  #attached = true;

  constructor(nodeId: NodeId, hub: InProcessHub) {
    this.nodeId = nodeId;
    this.#hub = hub;
  }

  send(peer: NodeId, batch: PeerBatch): Promise<void> {
    if (!this.#attached) return Promise.reject(new PeerUnreachableError(peer));
    return this.#hub.route(this, peer, batch);
  }

  onReceive(handler: (batch: PeerBatch) => void): void {
    this.#receive = handler;
  }

  onPeerDown(handler: (peer: NodeId) => void): void {
    this.#peerDown = handler;
  }

  async close(): Promise<void> {
    if (this.#attached) this.#hub.remove(this);
  }

  /** @internal */
  deliver(batch: PeerBatch): void {
    if (this.#attached) this.#receive?.(batch);
  }

  /** @internal */
  peerDown(peer: NodeId): void {
    if (this.#attached) this.#peerDown?.(peer);
  }

  /** @internal */
  detach(): void {
    this.#attached = false;
  }
}
