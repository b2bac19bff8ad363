/**
 * The sends this node's queue leaders make to the channels of one other node in one event-loop
 * turn (deliveries, cancellations), gathered into one queue-link call (`QueueOp.batch`,
 * cluster/queue-batch-codec.ts): one frame, one pending call, one deadline and one answer for all of
 * them, where each was a call of its own. Used once the feature flag `batched_remote_sends` is
 * enabled (every member answers the op).
 *
 * Each send still gets its own outcome (`send` resolves, or rejects as its call of its own would
 * have: with the refusal the node answered for it, or with the batch's loss or timeout), so the
 * remote owner sinks keep their order, resend and give-up rules unchanged. `post` hands the same
 * outcome to a listener instead, called in send order once the batch is answered: no promise, no
 * reaction job and no closures per delivery (they were ~10 % of a leader's CPU delivering to
 * another node's consumer, issue 28). Sends leave in the order
 * they were made: a batch goes out at the end of the turn (or at once when it reaches its bound,
 * and the next one after it), on the one link stream that keeps frames in order.
 */
import { decodeBatchAnswer, EncodedBatch, encodeGroup } from './queue-batch-codec.ts';
import type { FrameBody } from './queue-link.ts';
import { QueueLinkRemoteError } from './queue-link.ts';
import type { SendBody } from './queue-rpc-codec.ts';
import { QueueOp, sendBodyBytes } from './queue-rpc-codec.ts';

/** Bytes of bodies a batch carries at most: past it, it goes and the next sends start another. */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** Sends a batch carries at most. */
export const MAX_BATCH_SENDS = 4096;

/** How a batch reaches the other node: a queue-link call whose body is `parts` in a row. */
export type BatchCall = (
  node: string,
  op: number,
  group: string,
  body: SendBody | FrameBody,
) => Promise<Uint8Array>;

/** Told each send's outcome, with the token the send was posted with. Must not throw. */
export interface SendListener<T> {
  sent(token: T): void;
  failed(token: T, error: unknown): void;
}

/** A promise's settle functions. */
interface Settle {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** The listener of `send`'s promises: the token is the promise's settle functions. */
const PROMISED: SendListener<Settle> = {
  sent: (settle) => settle.resolve(),
  failed: (settle, error) => settle.reject(error),
};

/**
 * A batch being gathered: each send's fields at its index of every array (no object per send: a
 * turn carries hundreds of deliveries).
 */
interface OpenBatch {
  readonly ops: number[];
  readonly groups: string[];
  readonly bodies: SendBody[];
  readonly listeners: SendListener<unknown>[];
  readonly tokens: unknown[];
  bytes: number;
  /** Gone (flushed): later sends open another. */
  gone: boolean;
}

export class RemoteSendBatches {
  readonly #call: BatchCall;
  /** This turn's batch per node, until it goes. */
  readonly #open = new Map<string, OpenBatch>();

  constructor(call: BatchCall) {
    this.#call = call;
  }

  /** Send `op` with `body` for `group` to `node` with this turn's other sends to it. */
  send(node: string, op: number, group: string, body: SendBody): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.post(node, op, group, body, PROMISED, { resolve, reject });
    });
  }

  /** `send`, its outcome told to `listener` with `token`. */
  post<T>(
    node: string,
    op: number,
    group: string,
    body: SendBody,
    listener: SendListener<T>,
    token: T,
  ): void {
    const bytes = sendBodyBytes(body);
    let batch = this.#open.get(node);
    if (
      batch !== undefined &&
      (batch.ops.length >= MAX_BATCH_SENDS || batch.bytes + bytes > MAX_BATCH_BYTES)
    ) {
      this.#flush(node, batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const opened: OpenBatch = {
        ops: [],
        groups: [],
        bodies: [],
        listeners: [],
        tokens: [],
        bytes: 0,
        gone: false,
      };
      this.#open.set(node, opened);
      queueMicrotask(() => this.#flush(node, opened));
      batch = opened;
    }
    batch.bytes += bytes;
    batch.ops.push(op);
    batch.groups.push(group);
    batch.bodies.push(body);
    batch.listeners.push(listener as SendListener<unknown>);
    batch.tokens.push(token);
  }

  #flush(node: string, batch: OpenBatch): void {
    if (this.#open.get(node) === batch) this.#open.delete(node);
    if (batch.gone) return;
    batch.gone = true;
    const { ops, bodies, listeners, tokens } = batch;
    const count = ops.length;
    if (count === 0) return;
    if (count === 1) {
      // Alone in its turn: a call of its own costs no more, and carries no batch header.
      const listener = listeners[0] as SendListener<unknown>;
      const token = tokens[0];
      this.#call(node, ops[0] as number, batch.groups[0] as string, bodies[0] as SendBody).then(
        () => listener.sent(token),
        (error: unknown) => listener.failed(token, error),
      );
      return;
    }
    let groups: Uint8Array[];
    try {
      groups = groupsOf(batch.groups);
    } catch (error) {
      failAll(batch, error);
      return;
    }
    this.#call(node, QueueOp.batch, '', new EncodedBatch(ops, bodies, groups)).then(
      (answer) => {
        let outcomes: ReturnType<typeof decodeBatchAnswer>;
        try {
          outcomes = decodeBatchAnswer(answer, count);
        } catch (error) {
          failAll(batch, error);
          return;
        }
        for (let i = 0; i < count; i++) {
          const listener = listeners[i] as SendListener<unknown>;
          const outcome = outcomes[i];
          if (outcome === undefined || outcome.ok) listener.sent(tokens[i]);
          else listener.failed(tokens[i], new QueueLinkRemoteError(outcome.code, outcome.text, node));
        }
      },
      (error: unknown) => failAll(batch, error),
    );
  }
}

function failAll(batch: OpenBatch, error: unknown): void {
  for (let i = 0; i < batch.listeners.length; i++)
    (batch.listeners[i] as SendListener<unknown>).failed(batch.tokens[i], error);
}

/** Each send's group encoded; the sends of a turn mostly share one, encoded once. */
function groupsOf(names: readonly string[]): Uint8Array[] {
  const groups: Uint8Array[] = [];
  let lastGroup: string | undefined;
  let lastBytes: Uint8Array | undefined;
  for (const group of names) {
    if (group !== lastGroup || lastBytes === undefined) {
      lastGroup = group;
      lastBytes = encodeGroup(group);
    }
    groups.push(lastBytes);
  }
  return groups;
}
