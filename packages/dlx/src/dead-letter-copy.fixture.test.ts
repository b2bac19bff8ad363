import { readFileSync } from 'node:fs';
import type { BasicProperties } from '@styx/client/wire';
import { fieldTableToJs } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { DeadLetteredCopy, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import type { Typed } from './test-support.ts';
import { tableFromTyped, typedTable } from './test-support.ts';

// What RabbitMQ 3.10.8 really produced for: publish (default exchange, rk xd.q1.K) → xd.q1.K
// [reject, requeue=false] → xd.dlx1 (fanout, no DLK) → xd.q2.K [x-message-ttl expired] → xd.dlx2
// (direct, DLK to-q3) → xd.q3.K; for K = quorum and classic, with and without `expiration`.
const FIXTURE = new URL('../../../test/fixtures/rabbitmq-3.10-x-death.json', import.meta.url);

interface Stage {
  routing_key: string;
  exchange: string;
  properties_amqplib: { headers: Record<string, unknown> };
  properties_wire_typed: Record<string, unknown> & { headers: Record<string, Typed> };
  body: string;
}
interface Sample {
  path: string;
  as_received_from_q1: Stage;
  after_first_dead_letter: Stage;
  after_second_dead_letter: Stage;
}

const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as { samples: Record<string, Sample> };

/**
 * `x-delivery-count` is written by a quorum queue when it delivers (RabbitMQ adds it to what q1 and
 * q3 delivered; it is not stored with the message, so the first dead-lettered copy lacks it). It
 * is a delivery concern, not dead-lettering's: the expectations leave it out.
 */
const DELIVERY_HEADERS = new Set(['x-delivery-count']);

function withoutDeliveryHeaders<T>(headers: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !DELIVERY_HEADERS.has(k)));
}

/** The message as q1 stored it, from what q1 delivered (minus delivery-time headers). */
function publishedMessage(stage: Stage): DeadLetterMessage {
  const wire = stage.properties_wire_typed;
  const properties: BasicProperties = {
    contentType: wire['content-type'] as string,
    deliveryMode: wire['delivery-mode'] as number,
    messageId: wire['message-id'] as string,
    headers: tableFromTyped(withoutDeliveryHeaders(wire.headers)),
  };
  if (wire.expiration !== undefined) properties.expiration = wire.expiration as string;
  return {
    exchange: stage.exchange,
    routingKey: stage.routing_key,
    properties,
    body: new TextEncoder().encode(stage.body),
    bcc: undefined,
  };
}

/** The copy's non-header properties in the fixture's dashed notation. */
function otherProperties(p: BasicProperties): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (p.contentType != null) out['content-type'] = p.contentType;
  if (p.deliveryMode != null) out['delivery-mode'] = p.deliveryMode;
  if (p.expiration != null) out.expiration = p.expiration;
  if (p.messageId != null) out['message-id'] = p.messageId;
  return out;
}

/** The newest x-death entry's time in a stage: the time RabbitMQ stamped that dead-lettering with. */
function newestDeathTime(stage: Stage): number {
  const xDeath = stage.properties_wire_typed.headers['x-death'] as Typed;
  const newest = (xDeath.v as Typed[])[0] as Typed;
  return ((newest.v as Record<string, Typed>).time as Typed).v as number;
}

function expectStage(copy: DeadLetteredCopy, stage: Stage): void {
  expect(copy.exchange).toBe(stage.exchange);
  expect(copy.routingKey).toBe(stage.routing_key);
  expect(copy.routingKeys).toEqual([stage.routing_key]);
  const { headers: expectedHeaders, ...expectedOthers } = stage.properties_wire_typed;
  // Structure, field types and order at every level: JSON.stringify keeps key order.
  expect(JSON.stringify(typedTable(copy.properties.headers), null, 1)).toBe(
    JSON.stringify(withoutDeliveryHeaders(expectedHeaders), null, 1),
  );
  expect(otherProperties(copy.properties)).toEqual(expectedOthers);
  // And what an amqplib consumer decodes, in the same key order.
  const js = fieldTableToJs(copy.properties.headers as NonNullable<BasicProperties['headers']>);
  expect(JSON.stringify(js)).toBe(JSON.stringify(withoutDeliveryHeaders(stage.properties_amqplib.headers)));
  expect(new TextDecoder().decode(copy.body)).toBe(stage.body);
}

describe('dead-lettering twice, as RabbitMQ 3.10 does (test/fixtures/rabbitmq-3.10-x-death.json)', () => {
  it('covers the four samples', () => {
    expect(Object.keys(fixture.samples).sort()).toEqual([
      'classic',
      'classic-with-expiration',
      'quorum',
      'quorum-with-expiration',
    ]);
  });

  describe.each(Object.entries(fixture.samples))('%s', (_name, sample) => {
    const q1 = sample.as_received_from_q1.routing_key;
    const q2 = q1.replace('.q1.', '.q2.');
    const published = publishedMessage(sample.as_received_from_q1);
    const first = deadLetterCopy({
      message: published,
      queue: q1,
      reason: 'rejected',
      dlx: 'xd.dlx1',
      dlk: undefined,
      timeSeconds: newestDeathTime(sample.after_first_dead_letter),
    });
    const second = deadLetterCopy({
      message: first,
      queue: q2,
      reason: 'expired',
      dlx: 'xd.dlx2',
      dlk: 'to-q3',
      timeSeconds: newestDeathTime(sample.after_second_dead_letter),
    });

    it('rejected from q1 to the fanout DLX: headers, types, order and properties equal after_first_dead_letter', () => {
      expectStage(first, sample.after_first_dead_letter);
    });

    it('expired from q2 to the direct DLX with DLK to-q3: equal after_second_dead_letter', () => {
      expectStage(second, sample.after_second_dead_letter);
    });

    it('records the keys the message was routed into the dying queue on, not the DLK', () => {
      // The 2nd death happened in q2, which the copy reached on q1's routing key through the
      // fanout DLX; the DLK to-q3 only routes the new copy.
      const fresh = (typedTable(second.properties.headers)['x-death'] as Typed).v as Typed[];
      const newest = (fresh[0] as Typed).v as Record<string, Typed>;
      expect(newest['routing-keys']).toEqual({ t: 'A', v: [{ t: 'S', v: q1 }] });
      expect(newest.exchange).toEqual({ t: 'S', v: 'xd.dlx1' });
    });
  });
});
