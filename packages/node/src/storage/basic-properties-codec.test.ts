import type { BasicProperties } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import {
  decodeBasicProperties,
  decodeBasicPropertiesAt,
  encodeBasicProperties,
} from './basic-properties-codec.ts';
import { StoredBytesCorruptedError } from './errors.ts';

/** Fresh bytes of `properties` (not the encoding remembered for the object). */
const bytesOf = (properties: BasicProperties): Uint8Array => encodeBasicProperties({ ...properties }).slice();

const PERSISTENT: BasicProperties = { deliveryMode: 2, contentType: 'text/plain' };
const OTHER: BasicProperties = { deliveryMode: 2, contentType: 'text/plaim' };

describe('decodeBasicProperties', () => {
  it('decodes the set properties into a plain object, delivered as the bytes they came from', () => {
    const bytes = bytesOf(PERSISTENT);
    const decoded = decodeBasicProperties(bytes);
    expect({ ...decoded }).toEqual(PERSISTENT);
    expect([...encodeBasicProperties(decoded)]).toEqual([...bytes]);
    expect(decodeBasicProperties(new Uint8Array(0))).toEqual({});
  });

  it('gives back the same object for the same bytes, and a new one for other bytes of the same length', () => {
    const first = decodeBasicProperties(bytesOf(PERSISTENT));
    expect(decodeBasicProperties(bytesOf(PERSISTENT))).toBe(first);
    const other = decodeBasicProperties(bytesOf(OTHER));
    expect(other).not.toBe(first);
    expect(other.contentType).toBe('text/plaim');
    expect(decodeBasicProperties(bytesOf(PERSISTENT)).contentType).toBe('text/plain');
  });

  it('keeps its own copy: bytes changed after they were decoded do not change what the next decode gives', () => {
    const frame = bytesOf(PERSISTENT);
    const first = decodeBasicProperties(frame);
    frame.set(bytesOf(OTHER));
    const second = decodeBasicProperties(frame);
    expect(second.contentType).toBe('text/plaim');
    expect(first.contentType).toBe('text/plain');
    expect([...encodeBasicProperties(first)]).toEqual([...bytesOf(PERSISTENT)]);
  });

  it('decodes long properties every time, correctly', () => {
    const long: BasicProperties = { deliveryMode: 1, messageId: 'm'.repeat(2000) };
    const a = decodeBasicProperties(bytesOf(long));
    const b = decodeBasicProperties(bytesOf(long));
    expect(a.messageId).toBe(long.messageId);
    expect(b).toEqual(a);
  });

  it('refuses bytes that do not decode, also right after a good decode of the same length', () => {
    const good = bytesOf(PERSISTENT);
    decodeBasicProperties(good);
    const bad = new Uint8Array(good.byteLength).fill(0xff);
    expect(() => decodeBasicProperties(bad)).toThrow(StoredBytesCorruptedError);
  });
});

describe('decodeBasicPropertiesAt', () => {
  it('decodes properties where they lie in larger bytes: the same object for a repeat, none set for an empty range', () => {
    const persistent = bytesOf(PERSISTENT);
    const other = bytesOf(OTHER);
    const bytes = new Uint8Array(Buffer.concat([Uint8Array.of(7), persistent, other, persistent]));
    const at = (i: number): [number, number] => {
      const start = 1 + (i === 0 ? 0 : i === 1 ? persistent.length : persistent.length + other.length);
      return [start, start + (i === 1 ? other.length : persistent.length)];
    };
    const first = decodeBasicPropertiesAt(bytes, ...at(0));
    expect({ ...first }).toEqual(PERSISTENT);
    const second = decodeBasicPropertiesAt(bytes, ...at(1));
    expect(second.contentType).toBe('text/plaim');
    const third = decodeBasicPropertiesAt(bytes, ...at(2));
    expect({ ...third }).toEqual(PERSISTENT);
    expect(decodeBasicPropertiesAt(bytes, ...at(2))).toBe(third);
    expect(decodeBasicProperties(persistent)).toBe(third);
    expect(decodeBasicPropertiesAt(bytes, 3, 3)).toEqual({});
    // Bytes that do not decode still throw, also in place.
    const bad = Uint8Array.of(0, 0xff, 0xff, 0xff);
    expect(() => decodeBasicPropertiesAt(bad, 1, 4)).toThrow(StoredBytesCorruptedError);
  });
});
