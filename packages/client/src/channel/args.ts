// amqplib's argument marshalling (lib/api_args.js), producing wire messages. Pure.
//
// Where amqplib merges named options into an `arguments`/`headers` table, it builds a fresh object
// whose prototype is the caller's table and sets the named keys on it; its encoder then walks the
// object with for-in, so the named keys come first (in the order set) and the caller's keys follow,
// minus any the named ones shadow. This module builds the same objects, and jsToFieldTable walks
// them the same way, so tables have amqplib's key order and types.
import type {
  BasicConsume,
  BasicGet,
  BasicProperties,
  BasicPublish,
  BasicQos,
  ExchangeBind,
  ExchangeDeclare,
  ExchangeDelete,
  FieldTable,
  QueueBind,
  QueueDeclare,
  QueueDelete,
} from '../wire/index.ts';
import { jsToFieldTable } from '../wire/index.ts';
import type {
  AssertExchangeOptions,
  AssertQueueOptions,
  ConsumeOptions,
  DeleteExchangeOptions,
  DeleteQueueOptions,
  GetOptions,
  PublishOptions,
} from './types.ts';

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/** amqplib's setIfDefined: null and undefined leave the key unset (so it cannot mask the prototype's). */
function setIfDefined(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== undefined && value !== null) obj[key] = value;
}

function derived(base: Record<string, unknown> | undefined | null): Record<string, unknown> {
  return Object.create(base ?? null) as Record<string, unknown>;
}

/** A table from an optional JS object; amqplib always sends a table (empty when none was given). */
function table(obj: Record<string, unknown> | undefined | null): FieldTable {
  return jsToFieldTable(obj ?? EMPTY);
}

/** QueueDeclare for assertQueue(queue, options): x-* arguments from the named options first. */
export function assertQueueArgs(
  queue: string | undefined | null,
  options: AssertQueueOptions = EMPTY,
): QueueDeclare {
  const argt = derived(options.arguments);
  setIfDefined(argt, 'x-expires', options.expires);
  setIfDefined(argt, 'x-message-ttl', options.messageTtl);
  setIfDefined(argt, 'x-dead-letter-exchange', options.deadLetterExchange);
  setIfDefined(argt, 'x-dead-letter-routing-key', options.deadLetterRoutingKey);
  setIfDefined(argt, 'x-max-length', options.maxLength);
  setIfDefined(argt, 'x-max-priority', options.maxPriority);
  setIfDefined(argt, 'x-overflow', options.overflow);
  setIfDefined(argt, 'x-queue-mode', options.queueMode);
  return {
    queue: queue || '',
    passive: false,
    durable: options.durable === undefined ? true : Boolean(options.durable),
    exclusive: Boolean(options.exclusive),
    autoDelete: Boolean(options.autoDelete),
    arguments: table(argt),
  };
}

/** QueueDeclare for checkQueue(queue): a passive declare. */
export function checkQueueArgs(queue: string): QueueDeclare {
  return { queue, passive: true, durable: true, exclusive: false, autoDelete: false, arguments: table(null) };
}

/** QueueDelete for deleteQueue(queue, options). */
export function deleteQueueArgs(queue: string, options: DeleteQueueOptions = EMPTY): QueueDelete {
  return { queue, ifUnused: Boolean(options.ifUnused), ifEmpty: Boolean(options.ifEmpty) };
}

/** QueueBind (and QueueUnbind, the same shape) for bindQueue(queue, source, pattern, args). */
export function bindQueueArgs(
  queue: string,
  source: string,
  pattern: string,
  argt: Record<string, unknown> | undefined,
): QueueBind {
  return { queue, exchange: source, routingKey: pattern, arguments: table(argt) };
}

/** ExchangeDeclare for assertExchange(exchange, type, options). */
export function assertExchangeArgs(
  exchange: string,
  type: string,
  options: AssertExchangeOptions = EMPTY,
): ExchangeDeclare {
  const argt = derived(options.arguments);
  setIfDefined(argt, 'alternate-exchange', options.alternateExchange);
  return {
    exchange,
    type,
    passive: false,
    durable: options.durable === undefined ? true : Boolean(options.durable),
    autoDelete: Boolean(options.autoDelete),
    internal: Boolean(options.internal),
    arguments: table(argt),
  };
}

/** ExchangeDeclare for checkExchange(exchange): a passive declare. */
export function checkExchangeArgs(exchange: string): ExchangeDeclare {
  return {
    exchange,
    type: '',
    passive: true,
    durable: true,
    autoDelete: false,
    internal: false,
    arguments: table(null),
  };
}

/** ExchangeDelete for deleteExchange(exchange, options). */
export function deleteExchangeArgs(exchange: string, options: DeleteExchangeOptions = EMPTY): ExchangeDelete {
  return { exchange, ifUnused: Boolean(options.ifUnused) };
}

/** ExchangeBind (and ExchangeUnbind) for bindExchange(destination, source, pattern, args). */
export function bindExchangeArgs(
  destination: string,
  source: string,
  pattern: string,
  argt: Record<string, unknown> | undefined,
): ExchangeBind {
  return { destination, source, routingKey: pattern, arguments: table(argt) };
}

/** BasicConsume for consume(queue, onMessage, options): x-priority from options.priority. */
export function consumeArgs(queue: string, options: ConsumeOptions = EMPTY): BasicConsume {
  const argt = derived(options.arguments);
  setIfDefined(argt, 'x-priority', options.priority);
  return {
    queue,
    consumerTag: options.consumerTag || '',
    noLocal: Boolean(options.noLocal),
    noAck: Boolean(options.noAck),
    exclusive: Boolean(options.exclusive),
    arguments: table(argt),
  };
}

/** BasicGet for get(queue, options). */
export function getArgs(queue: string, options: GetOptions = EMPTY): BasicGet {
  return { queue, noAck: Boolean(options.noAck) };
}

/** BasicQos for prefetch(count): per-consumer, never global (refused before this). */
export function qosArgs(count: number | undefined): BasicQos {
  return { prefetchSize: 0, prefetchCount: count || 0, global: false };
}

/** amqplib's CC/BCC conversion: a string becomes a one-element array; elements are stringified. */
function routingKeyList(cc: string | string[] | undefined): string[] | undefined {
  if (cc === undefined) return undefined;
  return Array.isArray(cc) ? cc.map(String) : [String(cc)];
}

function checkShortString(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new TypeError(`Field '${name}' is the wrong type; must be a string (up to 255 chars)`);
  }
  return value;
}

function checkOctet(name: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 255) {
    throw new TypeError(`Field '${name}' is the wrong type; must be a number (octet)`);
  }
  return value;
}

/**
 * The BasicProperties amqplib would send for publish options. Unset properties are left out, so
 * the receiver sees them as absent; headers are always present (CC and BCC first, then the
 * caller's headers), as amqplib always sends a header table.
 */
export function publishProperties(options: PublishOptions = EMPTY): BasicProperties {
  const headers = derived(options.headers);
  setIfDefined(headers, 'CC', routingKeyList(options.CC));
  setIfDefined(headers, 'BCC', routingKeyList(options.BCC));

  let deliveryMode: number | undefined;
  if (options.persistent !== undefined) deliveryMode = options.persistent ? 2 : 1;
  else if (typeof options.deliveryMode === 'number') deliveryMode = options.deliveryMode;
  else if (options.deliveryMode) deliveryMode = 2;

  const expiration =
    options.expiration === undefined || options.expiration === null ? undefined : String(options.expiration);

  const props: BasicProperties = { headers: jsToFieldTable(headers) };
  const contentType = checkShortString('contentType', options.contentType);
  if (contentType !== undefined) props.contentType = contentType;
  const contentEncoding = checkShortString('contentEncoding', options.contentEncoding);
  if (contentEncoding !== undefined) props.contentEncoding = contentEncoding;
  const mode = checkOctet('deliveryMode', deliveryMode);
  if (mode !== undefined) props.deliveryMode = mode;
  const priority = checkOctet('priority', options.priority);
  if (priority !== undefined) props.priority = priority;
  const correlationId = checkShortString('correlationId', options.correlationId);
  if (correlationId !== undefined) props.correlationId = correlationId;
  const replyTo = checkShortString('replyTo', options.replyTo);
  if (replyTo !== undefined) props.replyTo = replyTo;
  if (expiration !== undefined) props.expiration = expiration;
  const messageId = checkShortString('messageId', options.messageId);
  if (messageId !== undefined) props.messageId = messageId;
  if (options.timestamp !== undefined && options.timestamp !== null) {
    if (typeof options.timestamp !== 'number' || !(options.timestamp >= 0)) {
      throw new TypeError("Field 'timestamp' is the wrong type; must be a number (seconds since the epoch)");
    }
    props.timestamp = Math.floor(options.timestamp);
  }
  const type = checkShortString('type', options.type);
  if (type !== undefined) props.type = type;
  const userId = checkShortString('userId', options.userId);
  if (userId !== undefined) props.userId = userId;
  const appId = checkShortString('appId', options.appId);
  if (appId !== undefined) props.appId = appId;
  return props;
}

/** The BasicPublish for publish(exchange, routingKey, content, options). */
export function publishArgs(
  exchange: string,
  routingKey: string,
  content: Uint8Array,
  options: PublishOptions = EMPTY,
): BasicPublish {
  return {
    exchange,
    routingKey,
    mandatory: Boolean(options.mandatory),
    immediate: false,
    properties: publishProperties(options),
    body: content,
  };
}
