// amqplib's codec (lib/defs.js, lib/codec.js) as an independent encoder and decoder: every method
// of the spec and field tables of every type must give the same bytes both ways.
import { createRequire } from 'node:module';
import type { FieldTable } from '@styx/client/wire';
import { fieldTableToJs } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { AmqpReader } from './amqp-reader.ts';
import { AmqpWriter } from './amqp-writer.ts';
import { readFieldTable, writeFieldTable } from './field-table-codec.ts';
import { encodeMethodFrame, writeHeaderFrame } from './frame-encoder.ts';
import {
  ROUND_TRIP_KINDS,
  randomArgs,
  randomFieldTable,
  randomFieldValueOf,
  randomProperties,
  seededRandom,
} from './random-values.ts';
import type { AmqpMethodInit } from './spec.gen.ts';
import { decodeMethodFields, METHOD_DEFS } from './spec.gen.ts';

const require = createRequire(import.meta.url);
const defs = require('amqplib/lib/defs.js') as {
  encodeMethod(id: number, channel: number, fields: Record<string, unknown>): Buffer;
  encodeProperties(id: number, channel: number, size: number, fields: Record<string, unknown>): Buffer;
  decode(id: number, buf: Buffer): Record<string, unknown>;
};
const codec = require('amqplib/lib/codec.js') as {
  encodeTable(buf: Buffer, val: unknown, offset: number): number;
  decodeFields(slice: Buffer): Record<string, unknown>;
};

/** Our FieldTable as amqplib's encoder input: typed with '!' so amqplib picks the same tags. */
function toAmqplibTyped(t: FieldTable): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of t.entries) out[key] = typedValue(value);
  return out;
}

function typedValue(v: FieldTable['entries'][number]['value']): unknown {
  const [kind, payload] = Object.entries(v)[0] as [string, unknown];
  const names: Record<string, string> = {
    i8: 'int8',
    u8: 'uint8',
    i16: 'int16',
    u16: 'uint16',
    i32: 'int32',
    u32: 'uint32',
    i64: 'int64',
    f32: 'float',
    f64: 'double',
    timestamp: 'timestamp',
  };
  if (kind in names) return { '!': names[kind], value: payload };
  switch (kind) {
    case 'bool':
      return payload;
    case 'longStr':
      return payload;
    case 'byteArray':
      return Buffer.from(payload as Uint8Array);
    case 'void':
      return null;
    case 'decimal': {
      const d = payload as { scale: number; value: number };
      return { '!': 'decimal', value: { places: d.scale, digits: d.value } };
    }
    case 'array':
      return (payload as { values: FieldTable['entries'][number]['value'][] }).values.map(typedValue);
    case 'table':
      return toAmqplibTyped(payload as FieldTable);
  }
  throw new Error(`kind ${kind}`);
}

function ourTableBytes(t: FieldTable): Buffer {
  const w = new AmqpWriter();
  writeFieldTable(w, t);
  return w.take();
}

function amqplibTableBytes(t: FieldTable): Buffer {
  const buf = Buffer.alloc(1 << 16);
  const n = codec.encodeTable(buf, toAmqplibTyped(t), 0);
  return Buffer.from(buf.subarray(0, n));
}

function isTable(v: unknown): v is FieldTable {
  // Not `'entries' in v`: a Buffer has an entries() method.
  return v !== null && typeof v === 'object' && Array.isArray((v as { entries?: unknown }).entries);
}

/** Our decoded args in amqplib's decoded shapes (tables as amqplib's JS objects). */
function asAmqplibDecoded(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(args)) {
    out[k] = isTable(v) ? fieldTableToJs(v) : v;
  }
  return out;
}

describe('cross-check with amqplib', () => {
  it('field tables of every type: same bytes from both encoders, same values from both decoders', () => {
    const rng = seededRandom(91);
    for (const kind of ROUND_TRIP_KINDS) {
      for (let i = 0; i < 30; i++) {
        const table: FieldTable = { entries: [{ key: kind, value: randomFieldValueOf(rng, kind, 2) }] };
        const ours = ourTableBytes(table);
        expect(ours.toString('hex'), kind).toBe(amqplibTableBytes(table).toString('hex'));
        expect(readFieldTable(new AmqpReader().reset(ours, 0, ours.length))).toEqual(table);
        expect(codec.decodeFields(ours.subarray(4))).toEqual(fieldTableToJs(table));
      }
    }
    for (let i = 0; i < 200; i++) {
      const table = randomFieldTable(rng, 3);
      expect(ourTableBytes(table)).toEqual(amqplibTableBytes(table));
    }
  });

  it("every method: our frame equals amqplib's, and each side decodes the other's", () => {
    const rng = seededRandom(5);
    for (const def of METHOD_DEFS) {
      const id = def.classId * 65536 + def.methodId;
      for (let i = 0; i < 20; i++) {
        const args = randomArgs(rng, def);
        const ours = encodeMethodFrame(7, { name: def.name, args } as AmqpMethodInit);
        const amqplibArgs: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(args)) {
          amqplibArgs[k] = isTable(v) ? toAmqplibTyped(v) : v;
        }
        const theirs = defs.encodeMethod(id, 7, amqplibArgs);
        expect(ours.toString('hex'), def.name).toBe(theirs.toString('hex'));
        const payload = theirs.subarray(7, theirs.length - 1);
        const decoded = decodeMethodFields(
          new AmqpReader().reset(payload, 4, payload.length),
          def.classId,
          def.methodId,
        );
        expect(decoded).toEqual({ name: def.name, args });
        expect(defs.decode(id, ours.subarray(11, ours.length - 1))).toEqual(asAmqplibDecoded(args));
      }
    }
  });

  it('content headers: same bytes for random basic properties', () => {
    const rng = seededRandom(60);
    for (let i = 0; i < 300; i++) {
      const p = randomProperties(rng);
      const w = new AmqpWriter();
      writeHeaderFrame(w, 2, 1234, p);
      const amqplibProps: Record<string, unknown> = { ...p };
      if (p.headers != null) amqplibProps.headers = toAmqplibTyped(p.headers);
      expect(w.take().toString('hex')).toBe(defs.encodeProperties(60, 2, 1234, amqplibProps).toString('hex'));
    }
  });
});
