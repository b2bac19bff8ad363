// A publisher with confirms for cluster tests: what it sent, and how each publish ended.
import type { ConfirmChannel } from '@styx/client';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Publishes "0", "1", "2"... with confirms (at most 50 unconfirmed) until stopped or its channel
 * closes; each number ends confirmed or failed (nacked, or unconfirmed at the close).
 */
export class ConfirmedPublisher {
  readonly confirmed = new Set<number>();
  readonly failed = new Set<number>();
  next = 0;
  #stopped = false;
  readonly #running: Promise<void>;
  readonly #channel: ConfirmChannel;
  readonly #queue: string;

  constructor(channel: ConfirmChannel, queue: string) {
    this.#channel = channel;
    this.#queue = queue;
    this.#running = this.#run();
  }

  /** Stop publishing; resolves once every publish sent has its outcome. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #run(): Promise<void> {
    const inflight = new Set<Promise<void>>();
    while (!this.#stopped) {
      const n = this.next;
      const settled = new Promise<void>((resolve) => {
        try {
          this.#channel.sendToQueue(this.#queue, Buffer.from(String(n)), { persistent: true }, (err) => {
            (err ? this.failed : this.confirmed).add(n);
            resolve();
          });
          this.next++;
        } catch {
          this.#stopped = true; // the channel is closed: nothing more goes out
          resolve();
        }
      });
      inflight.add(settled);
      void settled.then(() => inflight.delete(settled));
      if (inflight.size >= 50) await Promise.race(inflight);
      if (n % 20 === 19) await sleep(5);
    }
    await Promise.all(inflight);
  }
}
