/**
 * The sends this node's queue leaders make to the channels of one other node in one event-loop
 * turn (deliveries, cancellations), gathered into one queue-link call (`QueueOp.batch`,
 * cluster/queue-batch-codec.ts): one frame, one pending call, one deadline and one answer for all of
 * them, where each was a call of its own. Used once the feature flag `batched_remote_sends` is
 * enabled (every member answers the op).
 *
 * Each send still gets its own outcome (`send` resolves, or rejects as its call of its own would
 * have: with the refusal the node answered for it, or with the batch's loss or timeout), so the
 * remote owner sinks keep their order, resend and give-up rules unchanged. Sends leave in the order
 * they were made: a batch goes out at the end of the turn (or at once when it reaches its bound,
 * and the next one after it), on the one link stream that keeps frames in order.
 */
import type { OutgoingSend } from './queue-batch-codec.ts';
import { decodeBatchAnswer, encodeBatch, encodeGroup } from './queue-batch-codec.ts';
import { QueueLinkRemoteError } from './queue-link.ts';
import type { SendBody } from './queue-rpc-codec.ts';
import { QueueOp, sendBodyBytes } from './queue-rpc-codec.ts';

/** Bytes of bodies a batch carries at most: past it, it goes and the next sends start another. */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** Sends a batch carries at most. */
export const MAX_BATCH_SENDS = 4096;

/** How a batch reaches the other node: a queue-link call whose body is `parts` in a row. */
export type BatchCall = (node: string, op: number, group: string, body: SendBody) => Promise<Uint8Array>;

interface Waiting extends OutgoingSend {
  readonly group: string;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

interface OpenBatch {
  readonly sends: Waiting[];
  bytes: number;
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
    const bytes = sendBodyBytes(body);
    let batch = this.#open.get(node);
    if (
      batch !== undefined &&
      (batch.sends.length >= MAX_BATCH_SENDS || batch.bytes + bytes > MAX_BATCH_BYTES)
    ) {
      this.#flush(node, batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const opened: OpenBatch = { sends: [], bytes: 0 };
      this.#open.set(node, opened);
      queueMicrotask(() => this.#flush(node, opened));
      batch = opened;
    }
    const sends = batch.sends;
    batch.bytes += bytes;
    return new Promise<void>((resolve, reject) => {
      sends.push({ op, group, body, resolve, reject });
    });
  }

  #flush(node: string, batch: OpenBatch): void {
    if (this.#open.get(node) === batch) this.#open.delete(node);
    const sends = batch.sends.splice(0);
    if (sends.length === 0) return;
    if (sends.length === 1) {
      // Alone in its turn: a call of its own costs no more, and carries no batch header.
      const only = sends[0] as Waiting;
      this.#call(node, only.op, only.group, only.body).then(() => only.resolve(), only.reject);
      return;
    }
    let groups: Uint8Array[];
    try {
      groups = groupsOf(sends);
    } catch (error) {
      for (const send of sends) send.reject(error);
      return;
    }
    this.#call(node, QueueOp.batch, '', encodeBatch(sends, groups)).then(
      (answer) => {
        let outcomes: ReturnType<typeof decodeBatchAnswer>;
        try {
          outcomes = decodeBatchAnswer(answer, sends.length);
        } catch (error) {
          for (const send of sends) send.reject(error);
          return;
        }
        for (let i = 0; i < sends.length; i++) {
          const send = sends[i] as Waiting;
          const outcome = outcomes[i];
          if (outcome === undefined || outcome.ok) send.resolve();
          else send.reject(new QueueLinkRemoteError(outcome.code, outcome.text, node));
        }
      },
      (error: unknown) => {
        for (const send of sends) send.reject(error);
      },
    );
  }
}

/** Each send's group encoded; the sends of a turn mostly share one, encoded once. */
function groupsOf(sends: readonly Waiting[]): Uint8Array[] {
  const groups: Uint8Array[] = [];
  let lastGroup: string | undefined;
  let lastBytes: Uint8Array | undefined;
  for (const send of sends) {
    if (send.group !== lastGroup || lastBytes === undefined) {
      lastGroup = send.group;
      lastBytes = encodeGroup(send.group);
    }
    groups.push(lastBytes);
  }
  return groups;
}
