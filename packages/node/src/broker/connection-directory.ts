/**
 * The client connections of the whole cluster, as operators see them (`GET /api/connections`,
 * `styx ctl list_connections`, the console): every node answers for every node's connections by
 * asking each member for its own over a cluster RPC (`CONNECTIONS_LIST_RPC`), all at once, each
 * call bounded by `LIST_TIMEOUT_MS`. A member that does not answer in time (down, partitioned,
 * an older build without the kind) is named in the answer's `unanswered` instead of failing the
 * whole list: an operator looking for a misbehaving client still sees the rest.
 *
 * Closing one (`DELETE /api/connections/{name}`, `styx ctl close_connection`) runs on the node
 * holding it (`CONNECTION_CLOSE_RPC`), which closes it with 320 CONNECTION_FORCED and the
 * operator's reason.
 */
import { RpcError } from '../cluster/cluster-rpc.ts';
import { Code } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import type { ClientConnection, ConnectionFacts } from './client-connection.ts';

/** The cluster RPC kind a node answers with the facts of its client connections. */
export const CONNECTIONS_LIST_RPC = 'connections-list';
/** The cluster RPC kind that closes one of the answering node's client connections. */
export const CONNECTION_CLOSE_RPC = 'connection-close';

/**
 * How long a member may take to list its connections or close one, ms. Short enough that a list
 * with a member down answers while an operator waits, long enough for a loaded node's answer.
 */
export const LIST_TIMEOUT_MS = 3_000;

/** A connection's facts with the node holding it (its name as operators know it, and its id). */
export interface NodeConnectionFacts extends ConnectionFacts {
  readonly node: string;
  readonly nodeId: string;
}

/** A member that did not answer, and why. */
export interface UnansweredNode {
  readonly node: string;
  readonly reason: string;
}

/** Every connection of the cluster, or of the members that answered. */
export interface ClusterConnections {
  readonly connections: readonly NodeConnectionFacts[];
  readonly unanswered: readonly UnansweredNode[];
}

/** What the directory needs of its broker. */
export interface ConnectionDirectoryHost {
  readonly selfId: string;
  readonly selfName: string;
  readonly logger: Logger;
  /** This node's open client connections. */
  local(): Iterable<ClientConnection>;
  /** The cluster's members (id and name); this node alone when it is not clustered. */
  members(): readonly { readonly id: string; readonly name: string }[];
  /** Absent on a node alone. */
  readonly cluster: Pick<BrokerCluster, 'handleRpc' | 'callRpc'> | undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function decodeJson(payload: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(payload));
  } catch (error) {
    throw new RpcError('BAD_REQUEST', `not a JSON request: ${(error as Error).message}`);
  }
}

export class ConnectionDirectory {
  readonly #host: ConnectionDirectoryHost;
  readonly #log: Logger;

  constructor(host: ConnectionDirectoryHost) {
    this.#host = host;
    this.#log = host.logger.child({ component: 'connection-directory' });
    host.cluster?.handleRpc(CONNECTIONS_LIST_RPC, async () =>
      encoder.encode(JSON.stringify(this.#localFacts())),
    );
    host.cluster?.handleRpc(CONNECTION_CLOSE_RPC, async (payload, from) => {
      const request = decodeJson(payload) as { name?: unknown; reason?: unknown };
      if (typeof request.name !== 'string' || typeof request.reason !== 'string') {
        throw new RpcError('BAD_REQUEST', "a close needs a 'name' and a 'reason'");
      }
      this.#log.info({ name: request.name, from }, 'closing a connection for another node');
      return encoder.encode(JSON.stringify({ closed: this.closeLocal(request.name, request.reason) }));
    });
  }

  /** Every member's connections, asked all at once; those that did not answer in `unanswered`. */
  async gather(): Promise<ClusterConnections> {
    const connections: NodeConnectionFacts[] = [];
    const unanswered: UnansweredNode[] = [];
    const members = this.#host.members();
    const answers = await Promise.allSettled(members.map((member) => this.#ask(member.id)));
    answers.forEach((answer, i) => {
      const member = members[i] as { id: string; name: string };
      if (answer.status === 'rejected') {
        const reason = (answer.reason as Error)?.message ?? String(answer.reason);
        unanswered.push({ node: member.name, reason });
        return;
      }
      for (const facts of answer.value) connections.push({ ...facts, node: member.name, nodeId: member.id });
    });
    connections.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { connections, unanswered };
  }

  /**
   * Close the connection named `name` on member `nodeId` with 320 CONNECTION_FORCED and `reason`:
   * whether it was still open there.
   */
  async close(nodeId: string, name: string, reason: string): Promise<boolean> {
    if (nodeId === this.#host.selfId) return this.closeLocal(name, reason);
    const cluster = this.#host.cluster;
    if (cluster === undefined) return false;
    const payload = encoder.encode(JSON.stringify({ name, reason }));
    const answer = decodeJson(await cluster.callRpc(nodeId, CONNECTION_CLOSE_RPC, payload, LIST_TIMEOUT_MS));
    return (answer as { closed?: unknown }).closed === true;
  }

  /** Close this node's connection named `name`, if open (320 CONNECTION_FORCED, `reason`). */
  closeLocal(name: string, reason: string): boolean {
    for (const connection of this.#host.local()) {
      if (connection.info().name !== name) continue;
      this.#log.info({ name, conn: connection.id, reason }, 'connection closed by an operator');
      connection.close(Code.CONNECTION_FORCED, reason);
      return true;
    }
    return false;
  }

  async #ask(nodeId: string): Promise<ConnectionFacts[]> {
    if (nodeId === this.#host.selfId) return this.#localFacts();
    const cluster = this.#host.cluster;
    if (cluster === undefined) throw new Error('not reachable from a node alone');
    const answer = await cluster.callRpc(nodeId, CONNECTIONS_LIST_RPC, new Uint8Array(0), LIST_TIMEOUT_MS);
    const facts = decodeJson(answer);
    if (!Array.isArray(facts)) throw new Error('answered something that is not a list of connections');
    return facts as ConnectionFacts[];
  }

  #localFacts(): ConnectionFacts[] {
    return [...this.#host.local()].map((connection) => connection.info());
  }
}
