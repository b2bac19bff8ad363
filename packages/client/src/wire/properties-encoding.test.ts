// The per-object memory of properties encodings: it serves an object's own bytes, never an object's
// that it was copied or derived from, and no enumeration or comparison of the object sees it.
import { describe, expect, it } from 'vitest';
import { decodeProperties, encodeProperties } from './codec.ts';
import { encodePropertiesOnce, rememberPropertiesEncoding } from './properties-encoding.ts';
import type { BasicProperties } from './types.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function sample(): BasicProperties {
  return {
    contentType: 'text/plain',
    deliveryMode: 2,
    headers: { entries: [{ key: 'x-death', value: { array: { values: [{ longStr: 'q' }] } } }] },
  };
}

describe('encodePropertiesOnce', () => {
  it('encodes once per object: the same bytes object each time, equal to encodeProperties', () => {
    const p = sample();
    const first = encodePropertiesOnce(p);
    expect(hex(first)).toBe(hex(encodeProperties(p)));
    expect(encodePropertiesOnce(p)).toBe(first);
  });

  it('is invisible to enumeration, JSON and deep equality', () => {
    const p = sample();
    encodePropertiesOnce(p);
    expect(Object.keys(p)).toEqual(['contentType', 'deliveryMode', 'headers']);
    const walked: string[] = [];
    for (const key in p) walked.push(key);
    expect(walked).toEqual(['contentType', 'deliveryMode', 'headers']);
    expect(JSON.stringify(p)).toBe(JSON.stringify(sample()));
    expect(p).toEqual(sample());
    expect(sample()).toEqual(p);
  });

  it('never serves an object the bytes of the object it was copied from', () => {
    const p = sample();
    encodePropertiesOnce(p);
    const spread: BasicProperties = { ...p, contentType: 'application/json' };
    const assigned = Object.assign({}, p, { priority: 7 });
    const cloned = structuredClone(p);
    expect(decodeProperties(encodePropertiesOnce(spread)).contentType).toBe('application/json');
    expect(decodeProperties(encodePropertiesOnce(assigned)).priority).toBe(7);
    expect(hex(encodePropertiesOnce(cloned))).toBe(hex(encodeProperties(p)));
    expect(encodePropertiesOnce(cloned)).not.toBe(encodePropertiesOnce(p));
  });

  it('never serves an object the bytes of its prototype', () => {
    const p = sample();
    encodePropertiesOnce(p);
    const derived = Object.create(p) as BasicProperties;
    derived.appId = 'derived';
    // protobufjs writes own properties only: the derived object's encoding has just appId.
    expect(decodeProperties(encodePropertiesOnce(derived)).appId).toBe('derived');
    expect(decodeProperties(encodePropertiesOnce(derived)).contentType).toBeNull();
  });

  it('remembers frozen objects too, and objects frozen after they were remembered', () => {
    const p = Object.freeze(sample());
    const first = encodePropertiesOnce(p);
    expect(encodePropertiesOnce(p)).toBe(first);
    expect(hex(first)).toBe(hex(encodeProperties(p)));
    const q = sample();
    encodePropertiesOnce(q);
    Object.freeze(q);
    const replacement = encodeProperties({ appId: 'replacement' });
    rememberPropertiesEncoding(q, replacement);
    expect(encodePropertiesOnce(q)).toBe(replacement);
  });

  it("serves the bytes it was told to remember (a publisher's, kept as they came)", () => {
    const p = sample();
    // The publisher's encoding with an unknown field (99) at the end: decodes to the same properties.
    const sent = new Uint8Array([...encodeProperties(p), 0x98, 0x06, 0x01]);
    const decoded = decodeProperties(sent);
    rememberPropertiesEncoding(decoded, sent);
    expect(encodePropertiesOnce(decoded)).toBe(sent);
    rememberPropertiesEncoding(decoded, encodeProperties(p));
    expect(hex(encodePropertiesOnce(decoded))).toBe(hex(encodeProperties(p)));
  });
});
