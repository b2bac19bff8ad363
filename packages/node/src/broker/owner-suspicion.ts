/**
 * What a queue's leader does with a channel (an owner) on another node, from what the failure
 * detector (cluster/failure-detector.ts) knows of that node: suspicion before verdict.
 *
 * - The node answers: its consumers take messages (`deliver`; a suspended owner is resumed, and
 *   keeps every message it holds: no redelivery, its acks count).
 * - The node is suspected (missed pings, lost connection): its consumers take no new messages
 *   (`suspend`, a `suspendOwner` entry in the queue's log); what they hold stays theirs.
 * - The node is known gone (`give-up`: an `ownerDown` entry, its unacked messages return to the
 *   queue, redelivered with their delivery count raised once):
 *   - it was forgotten (no longer a member: no process of it will ever answer for the channel);
 *   - it answers as a new incarnation (it restarted: the channel died with the old process, whose
 *     run id is in the owner id);
 *   - or it stayed suspected for the queue's `consumer-disconnected-timeout` (60 s by default, as
 *     RabbitMQ 4.3), measured on this node's monotonic clock with its own stalls left out.
 *
 * Each replica leading a queue decides for that queue and proposes the result through the queue's
 * log (the machine stays pure: every replica applies the same `suspendOwner`/`ownerDown`); a new
 * leader decides again from its own node's view, so a decision is never lost with a leader.
 */

export type OwnerVerdict = 'deliver' | 'suspend' | 'give-up';

/** What this node's failure detector knows of a member now. */
export interface PeerStatus {
  /** It missed its pings or lost its connection, and has not answered since. */
  readonly suspected: boolean;
  /** How long it has been suspected, ms (0 while it is not). */
  readonly unreachableMs: number;
  /** The incarnation (run id) it last answered as, if known. */
  readonly incarnation: string | undefined;
}

/** What the leader's node knows of an owner's node. */
export interface OwnerNodeView {
  /** The owner's node is no longer a cluster member. */
  readonly forgotten: boolean;
  /** The node's current incarnation (its run id) differs from the one in the owner id. */
  readonly restarted: boolean;
  /** The failure detector suspects the node. */
  readonly suspected: boolean;
  /** How long it has been suspected, ms (monotonic, this node's stalls excluded). */
  readonly unreachableMs: number;
}

export function ownerVerdict(view: OwnerNodeView, timeoutMs: number): OwnerVerdict {
  if (view.forgotten || view.restarted) return 'give-up';
  if (!view.suspected) return 'deliver';
  return view.unreachableMs >= timeoutMs ? 'give-up' : 'suspend';
}

/**
 * The run id (the node process's incarnation) in an owner id `${nodeName}:${run}.${n}/${channel}`
 * or a connection id `${nodeName}:${run}.${n}`; undefined for an id of another shape.
 */
export function ownerRun(owner: string): string | undefined {
  const slash = owner.lastIndexOf('/');
  const connection = slash < 0 ? owner : owner.slice(0, slash);
  const colon = connection.lastIndexOf(':');
  const dot = connection.lastIndexOf('.');
  if (colon < 0 || dot < colon + 2) return undefined;
  return connection.slice(colon + 1, dot);
}
