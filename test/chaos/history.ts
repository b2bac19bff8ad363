// The history of a run: every client operation and every fault, one JSON object a line, in the order
// the harness saw them (one process, one clock). Jepsen's shape: an operation is invoked, then ends
// ok (it happened), fail (it certainly did not) or unknown (it may have: a confirm lost with its
// connection); observations (a delivery) and faults are single 'ok'/'info' entries.
import type { WriteStream } from 'node:fs';
import { createWriteStream, readFileSync } from 'node:fs';

export type OpType = 'invoke' | 'ok' | 'fail' | 'unknown' | 'info';

/**
 * publish: a confirmed publish (invoke, then ok/fail/unknown). deliver: a message a consumer got.
 * ack/reject/requeue: a consumer settled it (no broker answer exists for these in AMQP). fault/heal: the
 * nemesis. connection: a client lost or regained its node. depth: a queue's final message count.
 * phase: the run moved on (workload, heal, drain, done). sample: each node's CPU, memory and
 * process state, and the harness's own event-loop lag, every few seconds (a wedged node, or a
 * starved harness whose clients miss heartbeats, shows there). replica-check: a node's answer to
 * GET /api/checks/queues at the end of the run. step: one step of a fault that has several (a
 * kill-each's kills and restarts, a membership change's `styx ctl` verbs).
 */
export type OpF =
  | 'publish'
  | 'deliver'
  | 'ack'
  | 'reject'
  | 'requeue'
  | 'fault'
  | 'heal'
  | 'connection'
  | 'depth'
  | 'phase'
  | 'sample'
  | 'replica-check'
  | 'step';

/**
 * What the workload means to happen to a message, fixed at publish. 'requeue': its consumer nacks it
 * back to its queue once (requeue=true), so it must come again, flagged redelivered, and is then acked.
 */
export type Intent = 'ack' | 'reject' | 'expire' | 'requeue';

/** The first x-death entry and the x-first-death-* headers, as a consumer of a DLQ saw them. */
export interface DeathRecord {
  readonly queue: unknown;
  readonly reason: unknown;
  readonly count: unknown;
  readonly exchange: unknown;
  readonly routingKeys: unknown;
  readonly firstQueue: unknown;
  readonly firstReason: unknown;
  /** Number of x-death entries. */
  readonly entries: number;
}

export interface Op {
  /** Position in the history, from 0. */
  readonly index: number;
  /** Milliseconds since the run started. */
  readonly time: number;
  readonly type: OpType;
  /** Who did it: a publisher (p-…), a consumer (c-…), 'nemesis' or 'harness'. */
  readonly process: string;
  readonly f: OpF;
  readonly queue?: string;
  /** The message id (publisher and sequence number: "p-work1-a:17"). */
  readonly id?: string;
  readonly intent?: Intent;
  /**
   * On a publish: which of the publisher's channels carried it (1, 2... one per connection or
   * channel re-made). AMQP orders messages per channel only, so the order checker compares within one.
   */
  readonly channel?: number;
  readonly redelivered?: boolean;
  /** On a delivery from a dead-letter queue: its x-death; null when the header was missing. */
  readonly death?: DeathRecord | null;
  /** Free-form detail: the error of a fail/unknown, a fault's targets, a depth. */
  readonly value?: unknown;
}

export type OpInput = Omit<Op, 'index' | 'time'>;

/** The message id of publisher `process`'s `seq`-th message; parseId() reverses it. */
export const messageId = (process: string, seq: number): string => `${process}:${seq}`;

export function parseId(id: string): { process: string; seq: number } | undefined {
  const at = id.lastIndexOf(':');
  const seq = Number(id.slice(at + 1));
  if (at <= 0 || !Number.isInteger(seq)) return undefined;
  return { process: id.slice(0, at), seq };
}

/** Records ops in memory (for the checkers) and as JSON lines on disk (for people and replays). */
export class History {
  readonly ops: Op[] = [];
  readonly #startedAt: number;
  readonly #out: WriteStream | undefined;
  readonly #listeners = new Set<(op: Op) => void>();

  constructor(file?: string, startedAt = Date.now()) {
    this.#startedAt = startedAt;
    this.#out = file === undefined ? undefined : createWriteStream(file);
  }

  now(): number {
    return Date.now() - this.#startedAt;
  }

  append(input: OpInput): Op {
    const op: Op = { index: this.ops.length, time: this.now(), ...input };
    this.ops.push(op);
    this.#out?.write(`${JSON.stringify(op)}\n`);
    for (const listener of this.#listeners) listener(op);
    return op;
  }

  onOp(listener: (op: Op) => void): void {
    this.#listeners.add(listener);
  }

  close(): Promise<void> {
    const out = this.#out;
    return out === undefined ? Promise.resolve() : new Promise((r) => out.end(r));
  }
}

/** Reads a history file back (to check a finished run again). */
export function readHistory(file: string): Op[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Op);
}
