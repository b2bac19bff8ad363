/**
 * Publishing to queues through a node while their leaders move (failover, scenario o, and
 * failover-storm.ts): one confirm channel, opened again when it fails or leaves a publish unanswered.
 */
import type { BenchConfirmChannel, BenchConnection } from '../../adapters/client-api.ts';

/** Pause before publishing to a queue again after a nack or a failed channel, ms. */
export const RETRY_MS = 100;
/**
 * A publish not confirmed (nor nacked) within this long is sent again through a new channel, ms: a
 * broker may hold a message for a queue that has no leader without ever answering for it (RabbitMQ
 * 3.10 did for a hundred or more quorum queues of 500). Long enough for Styx's confirms, which came
 * 2.3 s after the kill all at once: 2 s reset its channel and cost it a round (3.8 s).
 */
export const ATTEMPT_TIMEOUT_MS = 5000;

/** One confirm channel on `conn`, opened again after it fails; failures reject its pending publishes. */
export class RetryingChannel {
  #channel: Promise<BenchConfirmChannel> | undefined;
  readonly #conn: BenchConnection;

  constructor(conn: BenchConnection) {
    this.#conn = conn;
  }

  /**
   * Publishes `body` to `queue`; resolves true once confirmed, false on a nack, a failure, or no
   * answer within ATTEMPT_TIMEOUT_MS.
   */
  async publish(queue: string, body: Buffer): Promise<boolean> {
    try {
      this.#channel ??= this.#open();
      const used = this.#channel;
      const ch = await used;
      return await new Promise<boolean>((done) => {
        const timer = setTimeout(() => {
          // A channel that leaves a publish unanswered may be stuck on a dead leader: the next
          // attempts go through a new one (once per channel, not once per queue).
          if (this.#channel === used) {
            this.#channel = undefined;
            ch.close().catch(() => undefined);
          }
          done(false);
        }, ATTEMPT_TIMEOUT_MS);
        ch.publish('', queue, body, { persistent: true }, (err) => {
          clearTimeout(timer);
          done(err === null);
        });
      });
    } catch {
      this.#channel = undefined;
      return false;
    }
  }

  async #open(): Promise<BenchConfirmChannel> {
    const ch = await this.#conn.createConfirmChannel();
    ch.on('error', () => {
      this.#channel = undefined;
    });
    return ch;
  }
}
