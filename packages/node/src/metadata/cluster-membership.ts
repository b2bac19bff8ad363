/**
 * The cluster's membership as the metadata machine keeps it: the member nodes (`clusterNodes`) and
 * the identities removed by forget_cluster_node (`forgottenNodes`). Part of the metadata state, so
 * every node agrees on who belongs: the cluster layer admits peers, addresses Raft traffic and
 * picks the metadata group's voters from this table alone.
 *
 * Rules (each refusal is an error reply, decided from the command and the state only):
 * - A node is identified by its Raft node id and its libp2p peer id; re-adding the same pair is a
 *   restart and updates its name and address (it keeps its place and `joinedAt`). An id or peer id
 *   that belongs to another member is 406.
 * - Names are unique: a different node under a member's name is 406 ("a node named X is already a
 *   member"). This is what an operator sees when a node restarts with an empty data dir (a new
 *   identity) under its old name: forget the old one first.
 * - A forgotten id or peer id may never join again (406): the old replica's log may hold entries
 *   the cluster no longer has, and letting it vote again could elect a stale leader. A node comes
 *   back only with a new identity (an empty data dir).
 * - Forgetting names a node by id or by name; an unknown one is 404; the last member is 406 (the
 *   metadata group would have no voter left).
 * - A member may be drained (maintenance mode) and revived; draining an unknown node is 404, and a
 *   forgotten member is no longer drained. Snapshots written before this kept no drained set.
 *
 * Bounds: one record per member; the forgotten set grows by two ids per forgotten node, for the
 * cluster's lifetime (an operator action, so a few hundred bytes per forget).
 */
import { ReplyCode } from '@styx/client/wire';
import { checkLength } from './names.ts';
import { error, ok } from './replies.ts';
import type { ClusterNodeRecord, MetadataCommand, MetadataReply } from './types.ts';

type AddClusterNode = Extract<MetadataCommand, { type: 'addClusterNode' }>;

/** How a member is kept in a snapshot: `[id, peerId, name, address, joinedAt]`. */
export type ClusterNodeRow = readonly [string, string, string, string, number];

export class ClusterMembership {
  /** Members by node id, oldest first (insertion order: the same on every replica and after restore). */
  readonly #byId = new Map<string, ClusterNodeRecord>();
  /** Node ids and peer ids of forgotten members. */
  readonly #forgotten = new Set<string>();
  /** Node ids of members in maintenance mode (`setNodeMaintenance`), in the order they were drained. */
  readonly #drained = new Set<string>();

  /** The members, oldest first. */
  nodes(): ClusterNodeRecord[] {
    return Array.from(this.#byId.values());
  }

  /** The member with this node id, else the one with this name. */
  node(idOrName: string): ClusterNodeRecord | undefined {
    return this.#byId.get(idOrName) ?? this.#byName(idOrName);
  }

  /** Whether this node id or peer id belonged to a forgotten member. */
  isForgotten(idOrPeerId: string): boolean {
    return this.#forgotten.has(idOrPeerId);
  }

  /** Node ids and peer ids of forgotten members, in the order they were forgotten. */
  forgotten(): string[] {
    return Array.from(this.#forgotten);
  }

  /** Whether the member with this node id is in maintenance mode (drained). */
  isDrained(id: string): boolean {
    return this.#drained.has(id);
  }

  /** Node ids of the members in maintenance mode. */
  drained(): string[] {
    return Array.from(this.#drained);
  }

  /** Drain (`drained`) or revive a member named by id or name; `removed`/`created` say if it changed. */
  setDrained(node: string, drained: boolean): MetadataReply {
    const member = this.node(node);
    if (member === undefined) return error(ReplyCode.NOT_FOUND, `no cluster node '${node}'`);
    if (drained === this.#drained.has(member.id)) return ok();
    if (drained) this.#drained.add(member.id);
    else this.#drained.delete(member.id);
    return ok(drained ? { created: true } : { removed: true });
  }

  /** `ts`: the entry's time, recorded as `joinedAt` of a new member. */
  add(c: AddClusterNode, ts: number): MetadataReply {
    if (c.id === '' || c.peerId === '' || c.name === '' || c.address === '') {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        'a cluster node needs a non-empty id, peer id, name and address',
      );
    }
    const tooLong = checkLength('node name', c.name);
    if (tooLong !== undefined) return tooLong;
    for (const [what, value] of [
      ['id', c.id],
      ['peer id', c.peerId],
    ] as const) {
      if (this.#forgotten.has(value)) {
        return error(
          ReplyCode.PRECONDITION_FAILED,
          `node '${c.name}' cannot join: its ${what} ${value} was removed from the cluster with ` +
            'forget_cluster_node and may not rejoin; start it with an empty data dir (a new identity)',
        );
      }
    }
    const existing = this.#byId.get(c.id);
    if (existing !== undefined && existing.peerId !== c.peerId) {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `node id ${c.id} is already a member with peer id ${existing.peerId}, not ${c.peerId}`,
      );
    }
    for (const member of this.#byId.values()) {
      if (member.id === c.id) continue;
      if (member.peerId === c.peerId) {
        return error(
          ReplyCode.PRECONDITION_FAILED,
          `peer id ${c.peerId} is already a member as node '${member.name}' (id ${member.id})`,
        );
      }
      if (member.name === c.name) {
        return error(
          ReplyCode.PRECONDITION_FAILED,
          `a node named '${c.name}' is already a member (id ${member.id}); if it was reset or ` +
            `replaced, forget it first (forget_cluster_node ${c.name}), or give this node another name`,
        );
      }
    }
    if (existing !== undefined && existing.name === c.name && existing.address === c.address) return ok();
    this.#byId.set(c.id, {
      id: c.id,
      peerId: c.peerId,
      name: c.name,
      address: c.address,
      joinedAt: existing?.joinedAt ?? ts,
    });
    return ok({ created: existing === undefined });
  }

  forget(node: string): MetadataReply {
    const member = this.node(node);
    if (member === undefined) {
      const why = this.#forgotten.has(node) ? ': it was forgotten already' : '';
      return error(ReplyCode.NOT_FOUND, `no cluster node '${node}'${why}`);
    }
    if (this.#byId.size === 1) {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `cannot forget node '${member.name}': it is the last member of the cluster`,
      );
    }
    this.#byId.delete(member.id);
    this.#drained.delete(member.id);
    this.#forgotten.add(member.id);
    this.#forgotten.add(member.peerId);
    return ok({ removed: true });
  }

  /** The members as snapshot rows, oldest first. */
  snapshotNodes(): ClusterNodeRow[] {
    return this.nodes().map((n) => [n.id, n.peerId, n.name, n.address, n.joinedAt]);
  }

  /**
   * Replace the state with a snapshot's (absent before snapshot version 3: empty). Throws a
   * TypeError on rows of the wrong shape.
   */
  restore(
    nodes: readonly ClusterNodeRow[] = [],
    forgotten: readonly string[] = [],
    drained: readonly string[] = [],
  ): void {
    this.#byId.clear();
    this.#forgotten.clear();
    this.#drained.clear();
    for (const row of nodes) {
      const [id, peerId, name, address, joinedAt] = row;
      const strings = [id, peerId, name, address].every((s) => typeof s === 'string');
      if (!strings || typeof joinedAt !== 'number' || row.length !== 5) {
        throw new TypeError('a cluster node row is not [id, peerId, name, address, joinedAt]');
      }
      this.#byId.set(id, { id, peerId, name, address, joinedAt });
    }
    for (const id of forgotten) {
      if (typeof id !== 'string') throw new TypeError('a forgotten node id is not a string');
      this.#forgotten.add(id);
    }
    for (const id of drained) {
      if (typeof id !== 'string') throw new TypeError('a drained node id is not a string');
      if (this.#byId.has(id)) this.#drained.add(id);
    }
  }

  #byName(name: string): ClusterNodeRecord | undefined {
    for (const member of this.#byId.values()) if (member.name === name) return member;
    return undefined;
  }
}
