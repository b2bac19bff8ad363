/**
 * The part of amqplib's promise API the scenarios use. Both @styx/client and amqplib provide it, so
 * a scenario is written once and runs against either broker.
 */

export interface BenchMessage {
  readonly content: Buffer;
  readonly fields: { readonly deliveryTag: number; readonly routingKey: string; readonly exchange: string };
}

export interface BenchPublishOptions {
  persistent?: boolean;
  /** Per-message TTL, ms. */
  expiration?: string | number;
}

export interface BenchQueueOptions {
  durable?: boolean;
  arguments?: Record<string, unknown>;
}

export interface BenchChannel {
  assertQueue(queue: string, options?: BenchQueueOptions): Promise<{ queue: string; messageCount: number }>;
  checkQueue(queue: string): Promise<{ queue: string; messageCount: number; consumerCount: number }>;
  deleteQueue(queue: string): Promise<unknown>;
  assertExchange(exchange: string, type: string, options?: { durable?: boolean }): Promise<unknown>;
  deleteExchange(exchange: string): Promise<unknown>;
  bindQueue(queue: string, source: string, pattern: string): Promise<unknown>;
  prefetch(count: number): Promise<unknown>;
  consume(
    queue: string,
    onMessage: (msg: BenchMessage | null) => void,
    options?: { noAck?: boolean },
  ): Promise<{ consumerTag: string }>;
  cancel(consumerTag: string): Promise<unknown>;
  ack(message: BenchMessage, allUpTo?: boolean): void;
  reject(message: BenchMessage, requeue?: boolean): void;
  publish(exchange: string, routingKey: string, content: Buffer, options?: BenchPublishOptions): boolean;
  close(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export interface BenchConfirmChannel extends BenchChannel {
  publish(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options?: BenchPublishOptions,
    callback?: (err: Error | null) => void,
  ): boolean;
  waitForConfirms(): Promise<void>;
}

export interface BenchConnection {
  createChannel(): Promise<BenchChannel>;
  createConfirmChannel(): Promise<BenchConfirmChannel>;
  close(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
