/**
 * Test support for the storage tests: temp dirs, sample messages with real field tables, and a
 * comparison of stored messages that accepts the decoder's forms (a Buffer body, a decoded
 * protobuf headers table).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import { fieldTableEquals } from '@styx/client/wire';
import { expect } from 'vitest';
import type { StoredMessage } from '../../queue/types.ts';

/** A fresh temp dir; `remove()` deletes it. */
export function tempDir(prefix: string): { readonly path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `styx-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A field table using every kind of field value, nested. */
export function richTable(): FieldTable {
  return {
    entries: [
      { key: 'i8', value: { i8: -128 } },
      { key: 'u8', value: { u8: 255 } },
      { key: 'i16', value: { i16: -32768 } },
      { key: 'u16', value: { u16: 65535 } },
      { key: 'i32', value: { i32: -2147483648 } },
      { key: 'u32', value: { u32: 4294967295 } },
      { key: 'i64', value: { i64: -(2 ** 53 - 1) } },
      { key: 'u64', value: { u64: 2 ** 53 - 1 } },
      { key: 'f32', value: { f32: 1.5 } },
      { key: 'f64', value: { f64: -0.1 } },
      { key: 'decimal', value: { decimal: { scale: 2, value: -12345 } } },
      { key: 'short', value: { shortStr: 'héllo' } },
      { key: 'long', value: { longStr: 'ünïcødé ✓ '.repeat(20) } },
      { key: 'bool', value: { bool: true } },
      { key: 'ts', value: { timestamp: 1_700_000_000 } },
      {
        key: 'array',
        value: { array: { values: [{ i8: 1 }, { longStr: 'x' }, { table: { entries: [] } }] } },
      },
      { key: 'table', value: { table: { entries: [{ key: 'inner', value: { bool: false } }] } } },
      { key: 'bytes', value: { byteArray: new Uint8Array([0, 1, 254, 255]) } },
      { key: 'void', value: { void: {} } },
      { key: '', value: { longStr: '' } },
    ],
  };
}

/** Properties with every property set, and a rich headers table. */
export function richProperties(): BasicProperties {
  return {
    contentType: 'application/json',
    contentEncoding: 'gzip',
    headers: richTable(),
    deliveryMode: 2,
    priority: 0,
    correlationId: 'corr',
    replyTo: 'amq.rabbitmq.reply-to',
    expiration: '60000',
    messageId: 'm-1',
    timestamp: 2 ** 40 + 1,
    type: 't',
    userId: 'guest',
    appId: '',
    clusterId: 'c',
  };
}

/** A message with `size` body bytes (a recognisable pattern). */
export function sampleMessage(size: number, overrides: Partial<StoredMessage> = {}): StoredMessage {
  const body = new Uint8Array(size);
  for (let i = 0; i < size; i++) body[i] = (i * 31 + 7) & 0xff;
  return { exchange: 'amq.topic', routingKey: 'a.b.c', properties: {}, body, bcc: undefined, ...overrides };
}

/** Expect `actual` to carry exactly what `expected` carries. */
export function expectSameMessage(actual: StoredMessage | undefined, expected: StoredMessage): void {
  expect(actual).toBeDefined();
  const a = actual as StoredMessage;
  expect(a.exchange).toBe(expected.exchange);
  expect(a.routingKey).toBe(expected.routingKey);
  expect(a.bcc).toStrictEqual(expected.bcc);
  expect(Buffer.from(a.body).equals(Buffer.from(expected.body))).toBe(true);
  expectSameProperties(a.properties, expected.properties);
}

export function expectSameProperties(actual: BasicProperties, expected: BasicProperties): void {
  const setKeys = (p: BasicProperties) =>
    Object.keys(p)
      .filter((k) => p[k as keyof BasicProperties] != null)
      .sort();
  expect(setKeys(actual)).toStrictEqual(setKeys(expected));
  for (const key of setKeys(expected) as (keyof BasicProperties)[]) {
    if (key === 'headers') {
      const a = actual.headers as FieldTable;
      const e = expected.headers as FieldTable;
      // Same pairs, and in the same order (the order of a table is observable, e.g. x-death).
      expect(fieldTableEquals(a, e)).toBe(true);
      expect(a.entries.map((entry) => entry.key)).toStrictEqual(e.entries.map((entry) => entry.key));
    } else {
      expect(actual[key]).toStrictEqual(expected[key]);
    }
  }
}
