import type { ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface';
import type { Logger } from '../logging/logger.ts';

/**
 * Who may connect to this node: the peer ids of the cluster's membership plus the joins an
 * operator approved. Behind the private network (only holders of the cluster secret get that far),
 * this is the second gate: a node with the secret but an id outside the set is refused as soon as
 * its id is proven (right after the noise handshake, before any stream, so before any Raft byte is
 * read), and this node never dials it.
 *
 * Both sets are mutable: the membership code replaces the members when the metadata group applies
 * a change, and adds or withdraws approved joins. A refused connection is logged at warn, with the
 * peer id and the remote address.
 */
export class ClusterGater {
  readonly #log: Logger;
  #members = new Set<string>();
  readonly #joins = new Set<string>();

  constructor(logger: Logger, members: Iterable<string> = []) {
    this.#log = logger.child({ component: 'cluster-gater' });
    this.setMembers(members);
  }

  /** Replace the membership (node ids, which are peer id strings). */
  setMembers(members: Iterable<string>): void {
    this.#members = new Set(members);
  }

  /** Admit a node that is not yet a member (an operator-approved join). */
  approveJoin(nodeId: string): void {
    this.#joins.add(nodeId);
  }

  /** Forget an approved join (it became a member, or the operator withdrew it). */
  withdrawJoin(nodeId: string): void {
    this.#joins.delete(nodeId);
  }

  /** Whether `nodeId` may connect (either way). */
  isAllowed(nodeId: string): boolean {
    return this.#members.has(nodeId) || this.#joins.has(nodeId);
  }

  /** The libp2p hooks, checked at every point where the remote peer id is known. */
  libp2pGater(): ConnectionGater {
    return {
      denyDialPeer: (peer) => this.#deny(peer, 'dial', undefined),
      denyOutboundConnection: (peer, conn) => this.#deny(peer, 'outbound', conn),
      denyInboundEncryptedConnection: (peer, conn) => this.#deny(peer, 'inbound', conn),
      denyOutboundEncryptedConnection: (peer, conn) => this.#deny(peer, 'outbound', conn),
    };
  }

  #deny(peer: PeerId, direction: string, conn: MultiaddrConnection | undefined): boolean {
    const nodeId = peer.toString();
    if (this.isAllowed(nodeId)) return false;
    this.#log.warn(
      { peer: nodeId, direction, remoteAddr: conn?.remoteAddr.toString() },
      'connection refused: peer is not a cluster member nor an approved join',
    );
    return true;
  }
}
