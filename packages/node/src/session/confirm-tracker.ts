/**
 * Publisher-confirm bookkeeping for one channel.
 *
 * Publishes are numbered from 1 after confirm.select. Each one settles once every target queue has
 * committed it (ack) or one refused it (nack). Outcomes may arrive out of order (different queues
 * commit at different times); confirms are sent in sequence order so that one `multiple` ack can
 * cover a whole run of consecutive acks — a burst of 1,000 publishes usually costs one frame.
 */
export type ConfirmOutcome = 'ack' | 'nack';

export interface ConfirmSink {
  /** Confirm every publish up to and including `seq` (multiple) or just `seq`. */
  sendAck(seq: number, multiple: boolean): void;
  sendNack(seq: number, multiple: boolean): void;
}

export class ConfirmTracker {
  /** Highest sequence number handed out. */
  private lastSeq = 0;
  /** Every publish up to this one has been confirmed to the client. */
  private confirmedUpTo = 0;
  /** Settled publishes above `confirmedUpTo`, waiting for the ones before them. */
  private readonly settled = new Map<number, ConfirmOutcome>();
  private readonly sink: ConfirmSink;

  constructor(sink: ConfirmSink) {
    this.sink = sink;
  }

  /** Number the next publish. */
  next(): number {
    this.lastSeq += 1;
    return this.lastSeq;
  }

  /** Publishes numbered but not yet confirmed to the client. */
  get outstanding(): number {
    return this.lastSeq - this.confirmedUpTo;
  }

  settle(seq: number, outcome: ConfirmOutcome): void {
    if (seq <= this.confirmedUpTo || seq > this.lastSeq) return;
    this.settled.set(seq, outcome);
  }

  /**
   * Send the confirms that can go out now: the longest run of settled publishes directly after
   * `confirmedUpTo`, as few frames as possible (consecutive acks become one `multiple` ack).
   */
  flush(): void {
    let runEnd = 0;
    let seq = this.confirmedUpTo + 1;
    for (;;) {
      const outcome = this.settled.get(seq);
      if (outcome === undefined) break;
      this.settled.delete(seq);
      if (outcome === 'ack') {
        runEnd = seq;
      } else {
        if (runEnd !== 0) this.sendAckRun(runEnd);
        runEnd = 0;
        this.sink.sendNack(seq, false);
        this.confirmedUpTo = seq;
      }
      seq += 1;
    }
    if (runEnd !== 0) this.sendAckRun(runEnd);
  }

  private sendAckRun(upTo: number): void {
    this.sink.sendAck(upTo, upTo - this.confirmedUpTo > 1);
    this.confirmedUpTo = upTo;
  }
}
