// Heartbeats, as amqplib does them: every half interval, send a heartbeat if nothing else was
// sent; every interval, check that something arrived, and declare the peer dead after two
// intervals in a row with nothing.

export interface HeartbeatHooks {
  /** True if any bytes were sent since the last call (and resets the flag). */
  takeSent(): boolean;
  /** True if any bytes arrived since the last call (and resets the flag). */
  takeReceived(): boolean;
  /** Send a Heartbeat frame. */
  beat(): void;
  /** Two intervals of silence: the connection is dead. */
  timeout(): void;
}

/** Number of consecutive silent intervals after which the connection is dead. */
export const MISSED_INTERVALS_LIMIT = 2;

/** Runs the two timers of a connection's heartbeat; stop() when the connection closes. */
export class Heartbeater {
  #sendTimer: ReturnType<typeof setInterval>;
  #recvTimer: ReturnType<typeof setInterval>;

  /** `intervalMs`: the negotiated heartbeat interval, in milliseconds (> 0). */
  constructor(intervalMs: number, hooks: HeartbeatHooks) {
    this.#sendTimer = setInterval(() => {
      if (!hooks.takeSent()) hooks.beat();
    }, intervalMs / 2);
    let missed = 0;
    this.#recvTimer = setInterval(() => {
      if (hooks.takeReceived()) {
        missed = 0;
        return;
      }
      missed++;
      if (missed >= MISSED_INTERVALS_LIMIT) hooks.timeout();
    }, intervalMs);
    // Heartbeats alone must not keep a Node process alive (the socket does while it is open).
    for (const t of [this.#sendTimer, this.#recvTimer] as unknown as { unref?: () => void }[]) t.unref?.();
  }

  stop(): void {
    clearInterval(this.#sendTimer);
    clearInterval(this.#recvTimer);
  }
}
