/**
 * Browsing a queue from any node of the cluster (the dead-letter inspector, redrive's selection):
 * the page is read on the queue's leader — by its local actor when this node leads, else through
 * the cluster RPC `queue.browse` (bytes: queue-browse-codec.ts) on the node that does, following
 * NOT_LEADER answers and trying the replicas in turn while the group elects.
 *
 * Consistency: a read of the leader's applied state and body store, with no Raft proposal. It shows
 * every command the leader applied (everything committed that consumers could have seen), so it is
 * as fresh as a delivery; it is not linearizable: a leader cut off from its quorum that has not yet
 * noticed answers with its last state, which a new leader elsewhere may already have moved past (a
 * few messages taken or added meanwhile). Browsing takes nothing, so such a page is only stale, and
 * redrive removes by id on the queue's actual leader (ids it no longer holds are left alone).
 *
 * Like the queue consistency check, it travels on the cluster RPC, not the queue link: a page of
 * messages (up to `MAX_PAGE_BYTES`) must not queue ahead of deliveries.
 */
import { RpcError, RpcRemoteError } from '../cluster/cluster-rpc.ts';
import { ClusterError } from '../cluster/errors.ts';
import type { Logger } from '../logging/logger.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { BrowsePage, BrowseRequest } from '../queue/message-browse.ts';
import { BrowseRequestError, checkBrowseRequest, MAX_PAGE_BYTES } from '../queue/message-browse.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import {
  decodeBrowsePage,
  decodeBrowseRequest,
  encodeBrowsePage,
  encodeBrowseRequest,
} from './queue-browse-codec.ts';

/** The cluster RPC kind a queue's leader answers browse requests with. */
export const QUEUE_BROWSE_RPC = 'queue.browse';
/** How long a browse keeps looking for the queue's leader, ms. */
export const BROWSE_DEADLINE_MS = 10_000;
/** How long one node may take to answer, ms. */
const CALL_TIMEOUT_MS = 5_000;
/** Pause between rounds while no leader answers, ms (doubling up to `MAX_PAUSE_MS`). */
const FIRST_PAUSE_MS = 50;
const MAX_PAUSE_MS = 500;
/**
 * Largest body a browse carries per message, bytes: the whole body of a message as large as one
 * answer may be (redrive reads whole messages; the HTTP preview asks for far less).
 */
export const MAX_BROWSE_BODY_BYTES = MAX_PAGE_BYTES;

/** Error codes of `queue.browse` answers (besides the RPC protocol's own). */
const BrowseCode = {
  notLeader: 'NOT_LEADER',
  unknownGroup: 'UNKNOWN_GROUP',
  badRequest: 'BAD_REQUEST',
} as const;

/** A page and the node (id) of the leader that read it. */
export interface QueueBrowseResult extends BrowsePage {
  readonly leader: string;
}

/** No leader of the queue answered within `BROWSE_DEADLINE_MS` (the API's 503). */
export class QueueBrowseUnavailableError extends ClusterError {
  constructor(record: QueueRecord, cause: unknown) {
    super(
      'QUEUE_BROWSE_UNAVAILABLE',
      `no leader of queue '${record.name}' in vhost '${record.vhost}' answered within ` +
        `${BROWSE_DEADLINE_MS / 1000} s: ${String((cause as Error | undefined)?.message ?? cause)}`,
    );
  }
}

/** The queue has no running replica here and this node is alone (the API's 404 race: just deleted). */
export class QueueNotRunningError extends ClusterError {
  constructor(record: QueueRecord) {
    super('QUEUE_NOT_RUNNING', `queue '${record.name}' in vhost '${record.vhost}' is not running`);
  }
}

export interface QueueBrowserHost {
  readonly selfId: string;
  readonly logger: Logger;
  /** The replica of a queue incarnation running here. */
  replica(groupId: string): QueueActor | undefined;
  /** The nodes holding a replica of `record`. */
  membersOf(record: QueueRecord): readonly string[];
  /** The queue's leader as this node last heard of it (its handle's hint), if any. */
  leaderHint(record: QueueRecord): string | undefined;
  /** Absent on a node alone. */
  readonly cluster: Pick<BrokerCluster, 'handleRpc' | 'callRpc'> | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class QueueBrowser {
  readonly #host: QueueBrowserHost;

  constructor(host: QueueBrowserHost) {
    this.#host = host;
    host.cluster?.handleRpc(QUEUE_BROWSE_RPC, async (payload) => {
      let request: ReturnType<typeof decodeBrowseRequest>;
      try {
        request = decodeBrowseRequest(payload, MAX_BROWSE_BODY_BYTES);
      } catch (error) {
        if (error instanceof BrowseRequestError) throw new RpcError(BrowseCode.badRequest, error.message);
        throw error;
      }
      const replica = host.replica(request.groupId);
      if (replica === undefined) throw new RpcError(BrowseCode.unknownGroup, request.groupId);
      if (!replica.isLeader) throw new RpcError(BrowseCode.notLeader, replica.leaderId ?? '');
      return encodeBrowsePage(replica.browse(request));
    });
  }

  /**
   * A page of `record`'s ready messages, read on its leader. Throws `BrowseRequestError` for a
   * request out of range, `QueueBrowseUnavailableError` when no leader answers in time.
   */
  async browse(record: QueueRecord, request: BrowseRequest): Promise<QueueBrowseResult> {
    checkBrowseRequest(request, MAX_BROWSE_BODY_BYTES);
    const host = this.#host;
    const cluster = host.cluster;
    if (cluster === undefined) {
      // A node alone: its actor is the queue.
      const actor = host.replica(record.groupId);
      if (actor === undefined) throw new QueueNotRunningError(record);
      return { ...actor.browse(request), leader: host.selfId };
    }
    const payload = encodeBrowseRequest({ ...request, groupId: record.groupId });
    const deadline = Date.now() + BROWSE_DEADLINE_MS;
    let hint = host.leaderHint(record);
    let pause = FIRST_PAUSE_MS;
    let lastError: unknown = new Error('no replica answered');
    for (let round = 0; ; round++) {
      const local = host.replica(record.groupId);
      if (local?.isLeader) return { ...local.browse(request), leader: host.selfId };
      const others = host.membersOf(record).filter((m) => m !== host.selfId);
      // The leader named last (by an answer, or the local replica) first, then the others in turn.
      const known = hint ?? local?.leaderId;
      const order =
        known !== undefined && known !== host.selfId ? [known, ...others.filter((m) => m !== known)] : others;
      hint = undefined;
      for (const peer of order) {
        try {
          const page = decodeBrowsePage(
            await cluster.callRpc(peer, QUEUE_BROWSE_RPC, payload, CALL_TIMEOUT_MS),
          );
          return { ...page, leader: peer };
        } catch (error) {
          lastError = error;
          if (error instanceof RpcRemoteError) {
            if (error.code === BrowseCode.badRequest) throw new BrowseRequestError(error.message);
            if (error.code === BrowseCode.notLeader && error.message !== '' && error.message !== peer) {
              hint = error.message;
              break;
            }
          }
          // Unreachable, slow, no replica there, or a follower that knows no leader: the next one.
        }
        if (Date.now() >= deadline) throw new QueueBrowseUnavailableError(record, lastError);
      }
      if (Date.now() >= deadline) throw new QueueBrowseUnavailableError(record, lastError);
      if (hint !== undefined && hint !== host.selfId && round % 4 !== 3) continue;
      host.logger.debug({ queue: record.name, err: lastError }, 'browse: no leader answered, trying again');
      await sleep(pause);
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    }
  }
}
