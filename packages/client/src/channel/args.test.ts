import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { BasicProperties, FieldTable, FieldValue } from '../wire/index.ts';
import {
  decodeBatch,
  encodeBatch,
  fieldTableToJs,
  fieldValuePayload,
  frame,
  jsToFieldTable,
  requireFieldValueKind,
} from '../wire/index.ts';
import {
  assertExchangeArgs,
  assertQueueArgs,
  consumeArgs,
  publishArgs,
  publishProperties,
  qosArgs,
} from './args.ts';
import type { PublishOptions } from './types.ts';

// amqplib's own argument marshalling is the oracle (the test workspace package depends on amqplib).
const requireFromTests = createRequire(new URL('../../../../test/package.json', import.meta.url));
const amqplibArgs = requireFromTests('amqplib/lib/api_args.js') as Record<
  string,
  (...args: unknown[]) => Record<string, unknown>
>;

/** Kinds and values of a table, in order. */
function typed(t: FieldTable | null | undefined): unknown[] {
  return (t?.entries ?? []).map((e) => [e.key, typedValue(e.value)]);
}

function typedValue(v: FieldValue): unknown {
  const kind = requireFieldValueKind(v);
  if (kind === 'array') return { array: fieldValuePayload(v, kind).values.map(typedValue) };
  if (kind === 'table') return { table: typed(fieldValuePayload(v, kind)) };
  return { [kind]: fieldValuePayload(v, kind) };
}

const PROPERTY_KEYS = [
  'contentType',
  'contentEncoding',
  'deliveryMode',
  'priority',
  'correlationId',
  'replyTo',
  'expiration',
  'messageId',
  'timestamp',
  'type',
  'userId',
  'appId',
  'clusterId',
] as const;

const PUBLISH_CASES: PublishOptions[] = [
  {},
  { persistent: true },
  { persistent: false, deliveryMode: 2 },
  { deliveryMode: true },
  { deliveryMode: 1 },
  { expiration: 60000 },
  { expiration: '1500' },
  { CC: 'one' },
  { CC: ['a', 'b'], BCC: 'hidden' },
  { headers: { CC: 'from-headers', 'x-n': 5, nested: { deep: [1, 'x'] } }, CC: ['wins'] },
  { headers: { b: 1, a: 2 }, BCC: ['z'] },
  {
    contentType: 'application/json',
    contentEncoding: 'gzip',
    priority: 7,
    correlationId: 'corr',
    replyTo: 'amq.rabbitmq.reply-to',
    messageId: 'm-1',
    timestamp: 1795308382,
    type: 'order.created',
    userId: 'guest',
    appId: 'shop',
    mandatory: true,
  },
];

describe('publish options → BasicProperties', () => {
  it.each(
    PUBLISH_CASES.map((o) => [JSON.stringify(o), o] as const),
  )('matches amqplib for %s', (_name, options) => {
    const ours = publishProperties(options);
    const theirs = amqplibArgs.publish?.('ex', 'rk', options) as Record<string, unknown>;
    for (const key of PROPERTY_KEYS) {
      expect([key, ours[key] ?? undefined]).toEqual([key, theirs[key]]);
    }
    // Header tables: same keys, order and types as amqplib's encoder would write.
    expect(typed(ours.headers)).toEqual(typed(jsToFieldTable(theirs.headers as Record<string, unknown>)));
    expect(publishArgs('ex', 'rk', new Uint8Array(0), options).mandatory).toBe(theirs.mandatory);
  });

  it('puts CC and BCC first, as arrays of long strings, then the caller’s headers', () => {
    const props = publishProperties({ CC: 'a', BCC: ['b', 'c'], headers: { x: 'y' } });
    expect(typed(props.headers)).toEqual([
      ['CC', { array: [{ longStr: 'a' }] }],
      ['BCC', { array: [{ longStr: 'b' }, { longStr: 'c' }] }],
      ['x', { longStr: 'y' }],
    ]);
  });

  it('turns a numeric expiration into its decimal string', () => {
    expect(publishProperties({ expiration: 60000 }).expiration).toBe('60000');
    expect(publishProperties({ expiration: 0 }).expiration).toBe('0');
  });

  it('leaves unset properties absent on the wire, and always sends headers', () => {
    const [f] = decodeBatch(
      encodeBatch([
        frame(1, 'basicPublish', publishArgs('', 'q', new Uint8Array([1]), { contentType: 'text/plain' })),
      ]),
    );
    if (f?.method !== 'basicPublish') throw new Error('method');
    const props = f.basicPublish.properties as BasicProperties;
    expect(props.contentType).toBe('text/plain');
    expect(props.deliveryMode).toBeNull();
    expect(props.expiration).toBeNull();
    expect(fieldTableToJs(props.headers)).toEqual({});
  });

  it('refuses wrongly typed properties as amqplib does', () => {
    expect(() => publishProperties({ contentType: 5 as unknown as string })).toThrow(TypeError);
    expect(() => publishProperties({ priority: 'high' as unknown as number })).toThrow(TypeError);
    expect(() => publishProperties({ priority: 256 })).toThrow(TypeError);
  });
});

describe('declare arguments', () => {
  it('builds queue arguments in amqplib’s order and types', () => {
    const options = {
      arguments: { 'x-queue-type': 'quorum', 'x-message-ttl': 1 },
      messageTtl: 60000,
      deadLetterExchange: 'dlx',
      maxLength: 100,
      expires: 3600000,
      overflow: 'reject-publish',
    };
    const ours = assertQueueArgs('q', options);
    const theirs = amqplibArgs.assertQueue?.('q', options) as {
      arguments: Record<string, unknown>;
      durable: boolean;
    };
    expect(typed(ours.arguments)).toEqual(typed(jsToFieldTable(theirs.arguments)));
    expect(ours.arguments?.entries.map((e) => e.key)).toEqual([
      'x-expires',
      'x-message-ttl',
      'x-dead-letter-exchange',
      'x-max-length',
      'x-overflow',
      'x-queue-type',
    ]);
    expect(ours.durable).toBe(true);
  });

  it('defaults as amqplib does', () => {
    expect(assertQueueArgs(undefined)).toMatchObject({
      queue: '',
      durable: true,
      exclusive: false,
      autoDelete: false,
    });
    expect(assertQueueArgs('q', { durable: false }).durable).toBe(false);
    expect(assertExchangeArgs('x', 'topic', { alternateExchange: 'ae' })).toMatchObject({
      exchange: 'x',
      type: 'topic',
      durable: true,
      arguments: { entries: [{ key: 'alternate-exchange', value: { longStr: 'ae' } }] },
    });
    expect(consumeArgs('q', { priority: 5 })).toMatchObject({
      consumerTag: '',
      noAck: false,
      arguments: { entries: [{ key: 'x-priority', value: { i8: 5 } }] },
    });
    expect(qosArgs(undefined)).toEqual({ prefetchSize: 0, prefetchCount: 0, global: false });
  });
});
