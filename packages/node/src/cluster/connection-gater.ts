import type { ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface';
import type { Logger } from '../logging/logger.ts';

/**
 * At most one refusal line per peer in this window, ms: a peer retrying in a loop (a forgotten
 * node that still runs, a misconfigured one) would otherwise fill the log with a line per attempt
 * (libp2p asks the gater several times per connection, too).
 */
export const REFUSAL_LOG_INTERVAL_MS = 10_000;

/**
 * Bound on the peers whose last refusal line is remembered for the rate limit. Past it, the
 * entries older than `REFUSAL_LOG_INTERVAL_MS` are dropped (and all of them if that is not
 * enough): a flood of distinct ids then costs at worst a line each, never unbounded memory.
 */
export const MAX_RATE_LIMITED_PEERS = 4_096;

export interface ClusterGaterOptions {
  /** See `ClusterGater.openToJoins` (default false). */
  readonly openToJoins?: boolean;
  /** The clock of the refusal log's rate limit, ms (default `Date.now`; tests inject one). */
  readonly now?: () => number;
}

/**
 * Who may connect to this node: the peer ids of the cluster's membership plus the joins an
 * operator approved. Behind the secret-bound noise handshake (only holders of the cluster secret
 * complete it, see `secretBoundNoise`), this is the second gate: a node with the secret but an id outside the set is refused as soon as
 * its id is proven (right after the noise handshake, before any stream, so before any Raft byte is
 * read), and this node never dials it.
 *
 * - Forgotten nodes (`forget`) are refused at every gate, whatever else says: a member that was
 *   forgotten and is still listed in a stale membership, an approved join, a stranger under
 *   `openToJoins`, an outbound allowance.
 * - `openToJoins` admits any other peer at the connection level: it completed the secret-bound
 *   handshake, so it holds the cluster secret, which this design takes as the approval to ask for a join. What it
 *   may do once connected is for the protocols to decide (`isMember`): the Raft transport refuses
 *   its streams, the RPC answers only the join.
 * - `allowOutbound` lets this node's own dial reach a peer the sets do not hold (the first contact
 *   of a join, a call to the leader before the membership caught up).
 *
 * The sets are mutable: the membership code replaces the members when the metadata group applies a
 * change, adds or withdraws approved joins, and forgets nodes. Gating happens when a connection is
 * made: a connection already open is not closed by a change here. A refused connection is logged
 * at warn with the peer id and the remote address, at most once per peer per
 * `REFUSAL_LOG_INTERVAL_MS` (the line counts the refusals it stood for).
 */
export class ClusterGater {
  readonly #log: Logger;
  readonly #now: () => number;
  #members = new Set<string>();
  readonly #joins = new Set<string>();
  readonly #forgotten = new Set<string>();
  /** Peer ids this node dials now although they are in no set: count of the dials under way. */
  readonly #outboundPeers = new Map<string, number>();
  /** Dials under way to an address without a peer id (the id is learnt in the handshake). */
  #outboundAddressDials = 0;
  /** Per refused peer: when its last refusal line was logged, and the refusals since. */
  readonly #refusals = new Map<string, { loggedAt: number; suppressed: number }>();
  /** See `ClusterGaterOptions.openToJoins`. */
  openToJoins: boolean;

  constructor(logger: Logger, members: Iterable<string> = [], options: ClusterGaterOptions = {}) {
    this.#log = logger.child({ component: 'cluster-gater' });
    this.#now = options.now ?? Date.now;
    this.openToJoins = options.openToJoins ?? false;
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

  /** Refuse `nodeId` at every gate from now on, even when it is listed as a member. Permanent. */
  forget(nodeId: string): void {
    this.#forgotten.add(nodeId);
  }

  /** Whether `nodeId` was forgotten. */
  isForgotten(nodeId: string): boolean {
    return this.#forgotten.has(nodeId);
  }

  /** Whether `nodeId` is a member or an approved join (and not forgotten). */
  isMember(nodeId: string): boolean {
    return !this.#forgotten.has(nodeId) && (this.#members.has(nodeId) || this.#joins.has(nodeId));
  }

  /** Whether `nodeId` may connect (either way): a member, or anyone not forgotten when open to joins. */
  isAllowed(nodeId: string): boolean {
    return this.isMember(nodeId) || (this.openToJoins && !this.#forgotten.has(nodeId));
  }

  /**
   * Let this node's own dial through until the returned function is called (call it exactly once):
   * to `target.peer`, or, with `target.address`, to whichever peer answers a dial to an address
   * that carries no peer id. Forgotten peers stay refused. Inbound connections are not affected.
   */
  allowOutbound(target: { readonly peer: string } | { readonly address: true }): () => void {
    if ('peer' in target) {
      const { peer } = target;
      this.#outboundPeers.set(peer, (this.#outboundPeers.get(peer) ?? 0) + 1);
      return once(() => {
        const left = (this.#outboundPeers.get(peer) ?? 1) - 1;
        if (left > 0) this.#outboundPeers.set(peer, left);
        else this.#outboundPeers.delete(peer);
      });
    }
    this.#outboundAddressDials += 1;
    return once(() => {
      this.#outboundAddressDials -= 1;
    });
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

  #deny(
    peer: PeerId,
    direction: 'dial' | 'outbound' | 'inbound',
    conn: MultiaddrConnection | undefined,
  ): boolean {
    const nodeId = peer.toString();
    if (this.isAllowed(nodeId)) return false;
    const forgotten = this.#forgotten.has(nodeId);
    if (!forgotten && direction !== 'inbound' && this.#allowedOutbound(nodeId, conn)) return false;
    this.#logRefusal(
      nodeId,
      forgotten
        ? 'connection refused: the peer was forgotten by the cluster'
        : 'connection refused: peer is not a cluster member nor an approved join',
      { direction, remoteAddr: conn?.remoteAddr.toString() },
    );
    return true;
  }

  /** An `allowOutbound` covers this dial: its peer, or an address dial (no `/p2p/` in the address). */
  #allowedOutbound(nodeId: string, conn: MultiaddrConnection | undefined): boolean {
    if (this.#outboundPeers.has(nodeId)) return true;
    if (this.#outboundAddressDials === 0 || conn === undefined) return false;
    return !conn.remoteAddr.getComponents().some((c) => c.name === 'p2p');
  }

  #logRefusal(nodeId: string, message: string, fields: Record<string, unknown>): void {
    const now = this.#now();
    const last = this.#refusals.get(nodeId);
    if (last !== undefined && now - last.loggedAt < REFUSAL_LOG_INTERVAL_MS) {
      last.suppressed += 1;
      return;
    }
    if (last === undefined && this.#refusals.size >= MAX_RATE_LIMITED_PEERS) this.#pruneRefusals(now);
    this.#refusals.set(nodeId, { loggedAt: now, suppressed: 0 });
    this.#log.warn({ peer: nodeId, ...fields, suppressed: last?.suppressed ?? 0 }, message);
  }

  #pruneRefusals(now: number): void {
    for (const [peer, entry] of this.#refusals) {
      if (now - entry.loggedAt >= REFUSAL_LOG_INTERVAL_MS) this.#refusals.delete(peer);
    }
    if (this.#refusals.size >= MAX_RATE_LIMITED_PEERS) this.#refusals.clear();
  }
}

/** `fn`, callable any number of times but run at most once. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
