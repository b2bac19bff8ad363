/**
 * Body repair across the cluster (see queue/body-repair.ts): a queue leader that lacks live bodies
 * asks the group's other replicas for them with the cluster RPC `queue.bodies`.
 *
 * Request (format 1): [u8 1][varint n][groupId UTF-8][varint count][varint id]...
 * Answer  (format 1): [u8 1][u8 complete][varint applied][varint count] then per body [varint id][varint n][stored-message encoding]
 *
 * `applied` is the answering replica's applied index: a body it lacks is proof of loss only for ids
 * it has applied (a replica behind the message's enqueue will get the body when it applies it).
 * An answer carries at most `MAX_ANSWER_BODY_BYTES` of bodies; `complete` says whether it looked
 * at every id asked for (if not, its silence on the others proves nothing; the caller asks again).
 *
 * Behind the feature flag `queue_body_repair` (cluster/feature-flags.ts): a node answers
 * `queue.bodies` only when its build supports the flag, and asks only while the flag is enabled
 * cluster-wide (every member answers it). Until then a fetch is refused here: the repair keeps the
 * ids missing (the queue's `bodies_missing`, the `queue_bodies_missing` alarm) and asks again.
 */
import { FeatureFlagDisabledError, QUEUE_BODY_REPAIR_FLAG } from '../cluster/feature-flags.ts';
import type { BodyFetchResult, BodySource } from '../queue/body-repair.ts';
import { BODY_FETCH_BATCH } from '../queue/body-repair.ts';
import type { BodyStore } from '../queue/body-store.ts';
import type { StoredMessage } from '../queue/types.ts';
import { ByteCursor, utf8Size, varintSize, writeString, writeVarint } from '../storage/binary.ts';
import { decodeStoredMessage, encodeStoredMessage } from '../storage/stored-message-codec.ts';
import type { BrokerCluster } from './broker-cluster.ts';

export const RPC_QUEUE_BODIES = 'queue.bodies';
/** How long a leader waits for one replica's answer, ms. */
export const BODY_FETCH_TIMEOUT_MS = 5_000;
/** Bodies (encoded) in one answer, bytes: well inside the cluster RPC's 16 MiB message bound. */
export const MAX_ANSWER_BODY_BYTES = 8 * 1024 * 1024;
const FORMAT = 1;

export interface BodyRequest {
  readonly groupId: string;
  readonly ids: readonly number[];
}

export interface BodyAnswer {
  /** Every id asked for was looked at (the answer was not cut short by its size bound). */
  readonly complete: boolean;
  readonly applied: number;
  readonly bodies: readonly { readonly id: number; readonly encoding: Uint8Array }[];
}

export function encodeBodyRequest({ groupId, ids }: BodyRequest): Uint8Array {
  const groupBytes = utf8Size(groupId);
  let size = 1 + varintSize(groupBytes) + groupBytes + varintSize(ids.length);
  for (const id of ids) size += varintSize(id);
  const out = Buffer.allocUnsafe(size);
  out[0] = FORMAT;
  let pos = writeString(out, 1, groupId, groupBytes);
  pos = writeVarint(out, pos, ids.length);
  for (const id of ids) pos = writeVarint(out, pos, id);
  return out;
}

/** Throws `StoredBytesCorruptedError` on malformed bytes, and on more ids than one fetch asks for. */
export function decodeBodyRequest(bytes: Uint8Array): BodyRequest {
  const r = new ByteCursor(bytes, 'queue.bodies request');
  const format = r.u8();
  if (format !== FORMAT) throw new RangeError(`queue.bodies request: unknown format ${format}`);
  const groupId = r.string();
  const count = r.varint();
  if (count > BODY_FETCH_BATCH)
    throw new RangeError(`queue.bodies request: ${count} ids (at most ${BODY_FETCH_BATCH})`);
  const ids: number[] = new Array(count);
  for (let i = 0; i < count; i++) ids[i] = r.varint();
  if (r.remaining !== 0) throw new RangeError('queue.bodies request: trailing bytes');
  return { groupId, ids };
}

export function encodeBodyAnswer({ complete, applied, bodies }: BodyAnswer): Uint8Array {
  let size = 2 + varintSize(applied) + varintSize(bodies.length);
  for (const { id, encoding } of bodies)
    size += varintSize(id) + varintSize(encoding.byteLength) + encoding.byteLength;
  const out = Buffer.allocUnsafe(size);
  out[0] = FORMAT;
  out[1] = complete ? 1 : 0;
  let pos = writeVarint(out, 2, applied);
  pos = writeVarint(out, pos, bodies.length);
  for (const { id, encoding } of bodies) {
    pos = writeVarint(out, pos, id);
    pos = writeVarint(out, pos, encoding.byteLength);
    out.set(encoding, pos);
    pos += encoding.byteLength;
  }
  return out;
}

export function decodeBodyAnswer(bytes: Uint8Array): BodyAnswer {
  const r = new ByteCursor(bytes, 'queue.bodies answer');
  const format = r.u8();
  if (format !== FORMAT) throw new RangeError(`queue.bodies answer: unknown format ${format}`);
  const complete = r.bool();
  const applied = r.varint();
  const count = r.varint();
  if (count > r.remaining) throw new RangeError(`queue.bodies answer: ${count} bodies`);
  const bodies: { id: number; encoding: Uint8Array }[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const id = r.varint();
    bodies[i] = { id, encoding: Buffer.from(r.bytes(r.varint())) };
  }
  return { complete, applied, bodies };
}

/** What a node answering `queue.bodies` needs of its local replica of a group. */
export interface LocalReplica {
  /** Index of the replica's last applied entry (message ids are such indexes). */
  readonly appliedIndex: number;
}

/**
 * Answer `queue.bodies` on this node from its replicas: the bodies its store holds, up to the
 * answer bound. A group with no replica here answers an error (the caller then treats this node as
 * not having answered).
 */
export function serveBodies(
  cluster: Pick<BrokerCluster, 'handleRpc' | 'featureFlags'>,
  replicaOf: (groupId: string) => LocalReplica | undefined,
  bodyStore: BodyStore,
): void {
  // A build without the flag does not know the RPC: callers get it answered as unknown.
  if (!cluster.featureFlags.isSupported(QUEUE_BODY_REPAIR_FLAG)) return;
  cluster.handleRpc(RPC_QUEUE_BODIES, async (payload) => {
    const { groupId, ids } = decodeBodyRequest(payload);
    const replica = replicaOf(groupId);
    if (replica === undefined) throw new RangeError(`no replica of group ${groupId} on this node`);
    const bodies: { id: number; encoding: Uint8Array }[] = [];
    let bytes = 0;
    let complete = true;
    for (const id of ids) {
      const message = bodyStore.get(groupId, id);
      if (message === undefined) continue;
      const encoding = encodeStoredMessage(message);
      if (bytes + encoding.byteLength > MAX_ANSWER_BODY_BYTES && bodies.length > 0) {
        complete = false;
        break;
      }
      bytes += encoding.byteLength;
      bodies.push({ id, encoding });
    }
    return encodeBodyAnswer({ complete, applied: replica.appliedIndex, bodies });
  });
}

/** The other replicas of a group, asked over the cluster RPC. */
export class ClusterBodySource implements BodySource {
  readonly #cluster: Pick<BrokerCluster, 'callRpc' | 'nodeId' | 'featureFlags'>;
  readonly #membersOf: (groupId: string) => readonly string[];

  constructor(
    cluster: Pick<BrokerCluster, 'callRpc' | 'nodeId' | 'featureFlags'>,
    membersOf: (groupId: string) => readonly string[],
  ) {
    this.#cluster = cluster;
    this.#membersOf = membersOf;
  }

  async fetch(groupId: string, ids: readonly number[]): Promise<BodyFetchResult> {
    if (!this.#cluster.featureFlags.isEnabled(QUEUE_BODY_REPAIR_FLAG)) {
      throw new FeatureFlagDisabledError(
        QUEUE_BODY_REPAIR_FLAG,
        'fetching missing bodies from other replicas',
      );
    }
    const self = this.#cluster.nodeId;
    const members = this.#membersOf(groupId);
    // Unknown here (yet): no verdict, above all not "lost everywhere"; the repair asks again.
    if (!members.includes(self)) throw new RangeError(`the members of group ${groupId} are not known here`);
    const peers = members.filter((member) => member !== self);
    const request = encodeBodyRequest({ groupId, ids });
    const answers = await Promise.allSettled(
      peers.map(async (peer) =>
        decodeBodyAnswer(await this.#cluster.callRpc(peer, RPC_QUEUE_BODIES, request, BODY_FETCH_TIMEOUT_MS)),
      ),
    );
    const found = new Map<number, StoredMessage>();
    // The lowest applied index among the replicas that answered; -1 once one did not.
    let appliedByAll = Number.POSITIVE_INFINITY;
    for (const answer of answers) {
      if (answer.status === 'rejected') {
        appliedByAll = -1;
        continue;
      }
      const { complete, applied, bodies } = answer.value;
      // An answer cut short by its size bound may leave out bodies it holds: its silence proves nothing.
      appliedByAll = complete ? Math.min(appliedByAll, applied) : -1;
      for (const { id, encoding } of bodies) {
        if (!found.has(id)) found.set(id, decodeStoredMessage(encoding, `repaired body ${groupId}/${id}`));
      }
    }
    const lost: number[] = [];
    for (const id of ids) if (!found.has(id) && id <= appliedByAll) lost.push(id);
    return { found, lost };
  }
}
