/**
 * What stopping a node would do to the cluster's Raft groups, as pure functions of each group's
 * members and which of them are online: the answers behind `styx ctl
 * check_if_node_is_quorum_critical` and `await_online_quorum_plus_one` (rabbitmq-queues' and
 * rabbitmq-upgrade's checks of the same names) and the `under_replicated` flag of a queue.
 *
 * A group of `n` voters commits with a quorum of `floor(n / 2) + 1`. A node is *critical* for a
 * group when it is one of the group's members and, without it, fewer than a quorum of members
 * would be online: stopping it leaves the group unable to commit (a queue refuses publishes, the
 * metadata group refuses declares) until a member comes back. A group that has no quorum already
 * is reported for each of its members: stopping one of them does not make it better.
 *
 * `online` may name nodes that are not members (a view of the whole cluster): they are ignored.
 */

/** One Raft group: a durable queue's or the metadata group. */
export type GroupRef =
  | { readonly kind: 'queue'; readonly vhost: string; readonly name: string }
  | { readonly kind: 'metadata' };

/** A group with its voters and the members online as the asking node sees them. */
export interface GroupMembers {
  readonly group: GroupRef;
  /** Node ids of the group's voters. */
  readonly members: readonly string[];
  /** Node ids that are online (members or not). */
  readonly online: readonly string[];
}

/** The quorum of a group of `members` voters: a majority. */
export function quorumOf(members: number): number {
  return Math.floor(members / 2) + 1;
}

/** How many of the group's members are online. */
export function onlineMembers(group: Pick<GroupMembers, 'members' | 'online'>): number {
  const online = new Set(group.online);
  return new Set(group.members.filter((id) => online.has(id))).size;
}

/**
 * The groups that would be without a quorum if `node` stopped (in the order given): those it is a
 * member of whose other online members are fewer than a quorum.
 *
 * Example: members a, b, c with c down. For a: b alone is online without a, 1 < 2: critical. With
 * every member online, a's stop leaves b and c, 2 >= 2: not critical.
 */
export function quorumCriticalGroups(node: string, groups: readonly GroupMembers[]): GroupMembers[] {
  return groups.filter((g) => {
    const members = new Set(g.members);
    if (!members.has(node)) return false;
    const others = onlineMembers({ members: [...members].filter((id) => id !== node), online: g.online });
    return others < quorumOf(members.size);
  });
}

/**
 * How many online members a group needs before any one node may stop: a quorum plus one, or every
 * member for groups of one or two voters (they can never lose a node and keep a quorum, so all of
 * them online is as good as they get).
 */
export function quorumPlusOne(members: number): number {
  return Math.min(quorumOf(members) + 1, members);
}

/** The groups with fewer online members than `quorumPlusOne` (what `await_online_quorum_plus_one` waits for). */
export function belowQuorumPlusOne(groups: readonly GroupMembers[]): GroupMembers[] {
  return groups.filter((g) => onlineMembers(g) < quorumPlusOne(new Set(g.members).size));
}

/**
 * Whether a queue is under-replicated: a member is offline, or it has fewer members than it should
 * (`target`: its `x-quorum-initial-group-size`, or the default of 3, at most the cluster's size),
 * e.g. after `delete_member` or a member forgotten.
 */
export function isUnderReplicated(group: Pick<GroupMembers, 'members' | 'online'>, target: number): boolean {
  const members = new Set(group.members).size;
  return onlineMembers(group) < members || members < target;
}

/** A group as operators name it: "queue 'q' in vhost '/'" or "the metadata group". */
export function groupLabel(group: GroupRef): string {
  return group.kind === 'metadata' ? 'the metadata group' : `queue '${group.name}' in vhost '${group.vhost}'`;
}
