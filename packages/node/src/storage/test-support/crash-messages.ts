/** The messages of the durable queue crash test: a sequence number in the body and in a header. */
import type { StoredMessage } from '../../queue/types.ts';

export const CRASH_QUEUE_GROUP = '/:crash:1';
/** Body bytes of each message. */
const BODY_BYTES = 256;

export function crashMessage(seq: number): StoredMessage {
  const body = Buffer.alloc(BODY_BYTES, seq & 0xff);
  body.write(`seq ${seq};`);
  return {
    exchange: 'amq.direct',
    routingKey: 'crash',
    properties: {
      deliveryMode: 2,
      messageId: `m${seq}`,
      headers: { entries: [{ key: 'seq', value: { i64: seq } }] },
    },
    body,
    bcc: undefined,
  };
}

/** The sequence number of a crash message; throws if its parts disagree (a damaged body). */
export function sequenceOf(message: StoredMessage): number {
  const seq = Number(/^seq (\d+);/.exec(Buffer.from(message.body).toString('latin1'))?.[1]);
  const header = message.properties.headers?.entries.find((e) => e.key === 'seq')?.value.i64;
  if (!Number.isSafeInteger(seq) || header !== seq || message.properties.messageId !== `m${seq}`) {
    throw new Error(`damaged crash message (body ${seq}, header ${String(header)})`);
  }
  if (!Buffer.from(message.body).equals(crashMessage(seq).body)) throw new Error(`damaged body of ${seq}`);
  return seq;
}
