import { describe, expect, it } from 'vitest';
import { StoredBytesCorruptedError } from './errors.ts';
import { jsonCommandCodec, NotPlainDataError } from './metadata-command-codec.ts';
import { richTable } from './test-support/storage-fixtures.ts';

const codec = jsonCommandCodec<unknown>();

function roundTrip<T>(value: T): T {
  return codec.decode(codec.encode(value)) as T;
}

describe('jsonCommandCodec', () => {
  it('round-trips a command with field tables exactly (byte arrays, 64-bit numbers, order)', () => {
    const command = {
      type: 'declareQueue',
      vhost: '/',
      name: 'q',
      durable: true,
      arguments: richTable(),
      nested: [{ args: richTable() }, [], {}],
    };
    const decoded = roundTrip(command);
    expect(decoded).toStrictEqual(command);
    const bytes = decoded.arguments.entries.find((e) => e.key === 'bytes')?.value;
    expect(bytes?.byteArray).toBeInstanceOf(Uint8Array);
  });

  it('round-trips the cluster membership commands', () => {
    const add = {
      type: 'addClusterNode',
      id: '12D3KooWQ',
      peerId: '12D3KooWQ',
      name: 'styx@host-a',
      address: '[::1]:25680',
    };
    const forget = { type: 'forgetClusterNode', node: 'styx@host-a' };
    expect(roundTrip(add)).toStrictEqual(add);
    expect(roundTrip(forget)).toStrictEqual(forget);
  });

  it('keeps what plain JSON loses: undefined, NaN, ±Infinity, -0, byte arrays', () => {
    const command = {
      missing: undefined,
      list: [undefined, null, 1],
      nan: Number.NaN,
      inf: Number.POSITIVE_INFINITY,
      ninf: Number.NEGATIVE_INFINITY,
      negativeZero: -0,
      max: Number.MAX_SAFE_INTEGER,
      tiny: 5e-324,
      empty: new Uint8Array(0),
      bytes: new Uint8Array([0, 255, 128]),
      view: new Uint8Array([9, 8, 7, 6]).subarray(1, 3),
    };
    const decoded = roundTrip(command);
    expect(decoded).toStrictEqual({ ...command, view: new Uint8Array([8, 7]) });
    expect(Object.is(decoded.negativeZero, -0)).toBe(true);
    expect('missing' in decoded).toBe(true);
  });

  it('keeps keys that look like its tags, and __proto__, as plain keys', () => {
    const command = JSON.parse(
      '{"$b": "not bytes", "$u": 0, "$$n": "x", "$": 1, "__proto__": {"polluted": true}, "ok": {"$n": "NaN"}}',
    ) as Record<string, unknown>;
    const decoded = roundTrip(command);
    expect(decoded).toStrictEqual(command);
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(decoded).sort()).toStrictEqual(['$', '$$n', '$b', '$u', '__proto__', 'ok']);
  });

  it('writes readable JSON', () => {
    const text = new TextDecoder().decode(codec.encode({ type: 'bind', routingKey: 'a.#' }));
    expect(text).toBe('{"type":"bind","routingKey":"a.#"}');
  });

  it('refuses values that are not plain data', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [
      new Map(),
      { at: new Date() },
      { f: () => 1 },
      { n: 1n },
      cyclic,
      { s: Symbol('x') },
    ]) {
      expect(() => codec.encode(bad)).toThrow(NotPlainDataError);
    }
    // Shared (not cyclic) references are fine.
    const shared = { a: 1 };
    expect(roundTrip({ x: shared, y: shared })).toStrictEqual({ x: { a: 1 }, y: { a: 1 } });
  });

  it('rejects bytes that are not its JSON', () => {
    for (const text of ['{', '\u00ff', '{"$zz": 1}']) {
      expect(() => codec.decode(new TextEncoder().encode(text))).toThrow(StoredBytesCorruptedError);
    }
    expect(() => codec.decode(new Uint8Array([0xff, 0xfe]))).toThrow(StoredBytesCorruptedError);
  });
});
