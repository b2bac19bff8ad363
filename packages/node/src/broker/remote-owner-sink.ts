/**
 * A channel on another node, as the queues this node leads see it: deliveries and cancellations go
 * to that node over the queue link, in the order the queues made them.
 *
 * Sends are pipelined (one link stream per peer keeps them in order). A send lost on the way (the
 * stream broke, the answer timed out) is sent again for as long as the owner is not known gone
 * (its node forgotten or restarted) — giving up on a node that is merely suspected (paused,
 * partitioned) would drop its consumer behind its back; its queues give it up after their
 * consumer-disconnected timeout instead (`forget`) — and the channel ignores a delivery id it
 * already holds. Resending only the lost ones would let later deliveries overtake
 * them (a message delivered out of queue order, not marked redelivered: the chaos suite's order
 * checker caught it after a slow link). So once a send is lost, later ones wait; when every send
 * in flight has been answered or lost, the lost ones and the waiting ones go again, in their
 * original order. A delivery that goes again is marked redelivered: it may have arrived the first
 * time (only its answer was lost), and the client may have acked or returned it since.
 *
 * A delivery the node refused (it answered, with an error other than "no such channel") did not
 * reach the client: it is returned to its queue (after `RESEND_DELAY_MS`, so a refusal that
 * persists does not spin), which frees its consumer's prefetch slot and delivers it again,
 * redelivered, to whichever consumer is next.
 *
 * What waits (lost and waiting sends, bodies included) is bounded (`RemoteOwnerSinkLimits`): a
 * consumer with unlimited prefetch would otherwise pile up every message of its queue here while
 * the link fails. Past a bound the queues with deliveries held give the owner up: its unacked
 * messages (those held here among them) go back to their queues, which keep them until a consumer
 * takes them, and the held deliveries are dropped (nothing is lost: the queue still has every
 * message that was not acked; a no-ack delivery, which its queue forgot when it made it, is lost as
 * when its channel closes — no-ack is at-most-once). The owner's node is then told to register its
 * consumers again (`QueueOp.reassert`), retried while the node is up.
 */
import type { SendBody } from '../cluster/queue-rpc-codec.ts';
import {
  decodeDelivery,
  encodeDelivery,
  joinSendBody,
  QueueOp,
  sendBodyBytes,
} from '../cluster/queue-rpc-codec.ts';
import type { QueueActor } from '../queue/queue-actor.ts';

/** Pause before sending lost sends again, ms. */
export const RESEND_DELAY_MS = 500;
/** Rounds of resending after which a warning is logged (the sends still go on). */
const WARN_AFTER_ROUNDS = 20;
/** The longest pause between two attempts at telling the owner's node to register again, ms. */
const REASSERT_MAX_DELAY_MS = 10_000;

/** Bounds of what a sink holds while sends to its node fail (lost and waiting sends). */
export interface RemoteOwnerSinkLimits {
  /** Sends held, at most (default `DEFAULT_REMOTE_OWNER_SINK_LIMITS`: 10 000). */
  readonly maxHeldSends: number;
  /** Bytes of the held sends' bodies (encoded deliveries, message bodies included), at most (default 64 MiB). */
  readonly maxHeldBytes: number;
}

export const DEFAULT_REMOTE_OWNER_SINK_LIMITS: RemoteOwnerSinkLimits = Object.freeze({
  maxHeldSends: 10_000,
  maxHeldBytes: 64 * 1024 * 1024,
});

export interface RemoteOwnerPort {
  /** Send one op for `group` to the owner's node; rejects when it did not arrive (or its answer). */
  send(op: number, group: string, body: SendBody): Promise<unknown>;
  /**
   * What an error of `send` means: the owner is gone for good (its channel closed), the node
   * refused the send for another reason (logged; not sent again), or it was lost on the way.
   */
  classify(error: unknown): 'owner-gone' | 'refused' | 'lost';
  /** Whether the owner's node is suspected (or not connected) now. */
  nodeDown(): boolean;
  /** Whether the owner is known gone: its node was forgotten or restarted (a new incarnation). */
  ownerGone(): boolean;
  /** The owner is gone (its channel closed, or its node down): `actor` gives it up. */
  lost(actor: QueueActor): void;
  /** Log resends that keep failing. */
  warn(fields: Record<string, unknown>, message: string): void;
}

interface Outgoing {
  readonly seq: number;
  readonly actor: QueueActor;
  readonly op: number;
  body: SendBody;
  /** Sent at least once (a delivery that goes again is marked redelivered). */
  sent: boolean;
}

const EMPTY = new Uint8Array(0);

export class RemoteOwnerSink {
  readonly #port: RemoteOwnerPort;
  readonly #limits: RemoteOwnerSinkLimits;
  #seq = 0;
  #inFlight = 0;
  /** Sends lost on the way, to go again (kept in `seq` order). */
  readonly #lostSends: Outgoing[] = [];
  /** Sends made after one was lost, waiting behind it. */
  #waiting: Outgoing[] = [];
  /** Sends in `#lostSends` and `#waiting`, and the bytes of their bodies. */
  #heldSends = 0;
  #heldBytes = 0;
  #recovering = false;
  #rounds = 0;
  /** Queues that gave the owner up on an overflow, with the last `seq` sent before: later losses of those are dropped. */
  readonly #givenUp = new WeakMap<QueueActor, number>();
  /** Whether a reassert notice is under way. */
  #noticing = false;

  constructor(port: RemoteOwnerPort, limits: RemoteOwnerSinkLimits = DEFAULT_REMOTE_OWNER_SINK_LIMITS) {
    this.#port = port;
    this.#limits = limits;
  }

  send(actor: QueueActor, op: number, body: SendBody): void {
    const outgoing: Outgoing = { seq: ++this.#seq, actor, op, body, sent: false };
    if (this.#recovering) this.#hold(this.#waiting, outgoing);
    else this.#transmit(outgoing);
  }

  #transmit(outgoing: Outgoing): void {
    this.#inFlight++;
    if (outgoing.sent && outgoing.op === QueueOp.deliver) outgoing.body = markedRedelivered(outgoing.body);
    outgoing.sent = true;
    this.#port.send(outgoing.op, outgoing.actor.groupId, outgoing.body).then(
      () => this.#settled(),
      (error: unknown) => {
        const kind = this.#port.classify(error);
        if (kind === 'owner-gone' || (kind === 'lost' && this.#port.ownerGone())) {
          this.#port.lost(outgoing.actor);
        } else if (kind === 'refused') {
          this.#refused(outgoing);
        } else if (!this.#droppedOnLoss(outgoing)) {
          this.#recovering = true;
          this.#hold(this.#lostSends, outgoing, true);
        }
        this.#settled();
      },
    );
  }

  /**
   * `actor` gave the owner up (its node stayed unreachable past the queue's timeout): the
   * deliveries of that queue held here are dropped, and those in flight are not sent again if lost
   * — the queue took those messages back. Cancellations stay.
   */
  forget(actor: QueueActor): void {
    this.#givenUp.set(actor, this.#seq);
    this.#dropHeldDeliveries(new Set([actor]));
  }

  /** A lost delivery of a queue that gave the owner up since it was sent: that queue took it back. */
  #droppedOnLoss(outgoing: Outgoing): boolean {
    const upTo = this.#givenUp.get(outgoing.actor);
    return upTo !== undefined && outgoing.seq <= upTo && outgoing.op === QueueOp.deliver;
  }

  /** The node refused a delivery: it never reached the client, so its queue takes it back. */
  #refused(outgoing: Outgoing): void {
    if (outgoing.op !== QueueOp.deliver) return;
    const { actor } = outgoing;
    let owner: string;
    let id: number;
    try {
      ({ owner, id } = decodeDelivery(joinSendBody(outgoing.body)));
    } catch {
      return; // not a delivery this sink encoded: nothing to return
    }
    setTimeout(() => {
      // No longer leading: the next leader sends the outstanding delivery again itself.
      if (!actor.isLeader) return;
      actor.returnMessages(owner, [id]).catch(() => undefined);
    }, RESEND_DELAY_MS).unref();
  }

  /** Hold `outgoing` (in order when `ordered`); past a bound, the held deliveries are given up. */
  #hold(list: Outgoing[], outgoing: Outgoing, ordered = false): void {
    if (ordered) insertInOrder(list, outgoing);
    else list.push(outgoing);
    this.#heldSends++;
    this.#heldBytes += sendBodyBytes(outgoing.body);
    if (this.#heldSends > this.#limits.maxHeldSends || this.#heldBytes > this.#limits.maxHeldBytes)
      this.#overflow();
  }

  /**
   * Too much held: every queue with a delivery held gives the owner up (its unacked messages,
   * these among them, go back to it) and the held deliveries are dropped; cancellations stay.
   */
  #overflow(): void {
    const actors = new Set<QueueActor>();
    for (const outgoing of this.#lostSends) if (outgoing.op === QueueOp.deliver) actors.add(outgoing.actor);
    for (const outgoing of this.#waiting) if (outgoing.op === QueueOp.deliver) actors.add(outgoing.actor);
    this.#port.warn(
      { held: this.#heldSends, heldBytes: this.#heldBytes, queues: actors.size },
      'deliveries held for a node that does not answer exceed the bound: its channel is given up, its messages go back to their queues',
    );
    this.#dropHeldDeliveries(actors);
    for (const actor of actors) {
      this.#givenUp.set(actor, this.#seq);
      this.#port.lost(actor);
    }
    this.#noticeReassert(RESEND_DELAY_MS);
  }

  /** Drop the held deliveries of `actors` (lost and waiting); cancellations stay. */
  #dropHeldDeliveries(actors: ReadonlySet<QueueActor>): void {
    const keep = (outgoing: Outgoing): boolean =>
      !actors.has(outgoing.actor) || outgoing.op !== QueueOp.deliver;
    const lostKept = this.#lostSends.filter(keep);
    this.#lostSends.splice(0, this.#lostSends.length, ...lostKept);
    this.#waiting = this.#waiting.filter(keep);
    this.#heldSends = 0;
    this.#heldBytes = 0;
    for (const outgoing of this.#lostSends.concat(this.#waiting)) {
      this.#heldSends++;
      this.#heldBytes += sendBodyBytes(outgoing.body);
    }
  }

  /**
   * Tell the owner's node to register its consumers again, until it answers; stop once it is
   * suspected (the leader tells it when it is back) or it refuses.
   */
  #noticeReassert(delay: number): void {
    if (this.#noticing) return;
    this.#noticing = true;
    this.#port.send(QueueOp.reassert, '', EMPTY).then(
      () => {
        this.#noticing = false;
      },
      (error: unknown) => {
        this.#noticing = false;
        if (this.#port.nodeDown() || this.#port.classify(error) !== 'lost') return;
        setTimeout(() => this.#noticeReassert(Math.min(delay * 2, REASSERT_MAX_DELAY_MS)), delay).unref();
      },
    );
  }

  #settled(): void {
    this.#inFlight--;
    if (!this.#recovering || this.#inFlight > 0) return;
    if (this.#lostSends.length === 0) {
      // Every lost send went again and arrived: later ones go directly again.
      this.#recovering = false;
      this.#rounds = 0;
      const waiting = this.#waiting;
      this.#waiting = [];
      this.#heldSends = 0;
      this.#heldBytes = 0;
      for (const outgoing of waiting) this.#transmit(outgoing);
      return;
    }
    this.#rounds++;
    if (this.#rounds === WARN_AFTER_ROUNDS) {
      this.#port.warn(
        { lost: this.#lostSends.length },
        'deliveries to a node that is up keep failing: still retrying',
      );
    }
    setTimeout(() => this.#resend(), RESEND_DELAY_MS).unref();
  }

  /** The lost sends, then the waiting ones, in order, from queues this node still leads. */
  #resend(): void {
    const again = this.#lostSends.splice(0).concat(this.#waiting);
    this.#waiting = [];
    this.#heldSends = 0;
    this.#heldBytes = 0;
    // Still recovering while they are in flight: new sends queue behind them.
    this.#inFlight++;
    for (const outgoing of again) if (outgoing.actor.isLeader) this.#transmit(outgoing);
    this.#settled();
  }
}

/** An encoded delivery with its redelivered flag set (the same bytes if they do not decode). */
function markedRedelivered(body: SendBody): SendBody {
  try {
    const d = decodeDelivery(joinSendBody(body));
    if (d.redelivered) return body;
    return encodeDelivery(d.owner, d.tag, d.id, true, d.deliveryCount, d.message);
  } catch {
    return body;
  }
}

function insertInOrder(list: Outgoing[], item: Outgoing): void {
  let i = list.length;
  while (i > 0 && (list[i - 1] as Outgoing).seq > item.seq) i--;
  list.splice(i, 0, item);
}
