/**
 * The live progress line on stderr: rewritten in place on a terminal (at most every
 * REDRAW_MS), or printed as a plain line every PLAIN_EVERY_MS otherwise (CI logs).
 */

/** Fastest redraw on a terminal, ms. */
const REDRAW_MS = 100;
/** Interval between plain lines when stderr is not a terminal, ms. */
const PLAIN_EVERY_MS = 5000;

export class ProgressLine {
  readonly #out: NodeJS.WriteStream;
  readonly #tty: boolean;
  #prefix = '';
  #lastDrawMs = 0;
  #shown = false;

  constructor(out: NodeJS.WriteStream = process.stderr) {
    this.#out = out;
    this.#tty = out.isTTY === true;
  }

  /** Sets what the following updates are about, e.g. '[styx 3/14] c.burst.at-most-once'. */
  begin(prefix: string): void {
    this.#prefix = prefix;
    this.#lastDrawMs = 0;
    this.update('starting');
  }

  update(text: string): void {
    const now = Date.now();
    const every = this.#tty ? REDRAW_MS : PLAIN_EVERY_MS;
    if (now - this.#lastDrawMs < every) return;
    this.#lastDrawMs = now;
    const line = `${this.#prefix}: ${text}`;
    if (this.#tty) {
      const width = (this.#out.columns ?? 120) - 1;
      this.#out.write(`\r\x1b[K${line.slice(0, width)}`);
      this.#shown = true;
    } else {
      this.#out.write(`${line}\n`);
    }
  }

  /** Ends the current line with a final message that stays. */
  finish(text: string): void {
    const line = `${this.#prefix}: ${text}`;
    this.#out.write(this.#tty ? `\r\x1b[K${line}\n` : `${line}\n`);
    this.#shown = false;
  }

  /** Prints a message of its own, keeping the live line intact below it. */
  log(text: string): void {
    this.#out.write(this.#tty && this.#shown ? `\r\x1b[K${text}\n` : `${text}\n`);
    this.#shown = false;
    this.#lastDrawMs = 0;
  }
}
