/**
 * A generic JSON codec for commands that are plain data: objects, arrays, strings, numbers,
 * booleans, null, undefined and Uint8Arrays — the metadata machine's commands, with their
 * FieldTables (`{entries: [{key, value: {<kind>: payload}}]}`, 64-bit values as JS numbers).
 *
 * JSON alone would lose some of that, so values JSON cannot carry are written as tagged objects:
 *   Uint8Array → {"$b": "<base64>"}     undefined → {"$u": 0}
 *   NaN, ±Infinity, -0 → {"$n": "NaN" | "Infinity" | "-Infinity" | "-0"}
 * and an object key that starts with "$" gets one more "$" in front, so no user key (a header
 * name, an argument name) can ever be mistaken for a tag. Everything else is plain JSON, readable
 * when inspecting a log.
 *
 * Round-trips exactly (`toStrictEqual`), except that every byte array decodes as a Uint8Array and
 * every object as a plain object. Objects that are not plain (class instances, Maps, a decoded
 * protobuf message) are refused when encoding: their own fields do not describe them (a decoded
 * message hides unset fields in its prototype), so convert them to plain data first. Cycles are
 * refused too (JSON cannot express them).
 */
import type { CommandCodec } from '@styx/raft';
import { StoredBytesCorruptedError } from './errors.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

const BYTES_TAG = '$b';
const UNDEFINED_TAG = '$u';
const NUMBER_TAG = '$n';

/** A value that is not plain data was handed to the codec. */
export class NotPlainDataError extends TypeError {
  readonly code = 'NOT_PLAIN_DATA';
  constructor(path: string, detail: string) {
    super(`cannot encode ${path}: ${detail}`);
    this.name = 'NotPlainDataError';
  }
}

/** A codec for commands of type `C`, which must be plain data (see the module comment). */
export function jsonCommandCodec<C>(): CommandCodec<C> {
  return {
    encode(command: C): Uint8Array {
      return encoder.encode(JSON.stringify(toJson(command, '$', new Set())));
    },
    decode(bytes: Uint8Array): C {
      let parsed: unknown;
      try {
        parsed = JSON.parse(decoder.decode(bytes));
      } catch (error) {
        throw new StoredBytesCorruptedError('JSON command', String(error));
      }
      return fromJson(parsed) as C;
    },
  };
}

function toJson(value: unknown, path: string, parents: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (Number.isFinite(value) && !Object.is(value, -0)) return value;
      return { [NUMBER_TAG]: Object.is(value, -0) ? '-0' : String(value) };
    case 'undefined':
      return { [UNDEFINED_TAG]: 0 };
    case 'object':
      break;
    default:
      throw new NotPlainDataError(path, `a ${typeof value} is not plain data`);
  }
  if (value === null) return null;
  if (value instanceof Uint8Array) {
    return { [BYTES_TAG]: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  }
  if (parents.has(value)) throw new NotPlainDataError(path, 'a cycle');
  parents.add(value);
  let result: unknown;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = toJson(value[i], `${path}[${i}]`, parents);
    result = out;
  } else {
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (proto as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      throw new NotPlainDataError(path, `an instance of ${name} is not a plain object`);
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const encoded = toJson((value as Record<string, unknown>)[key], `${path}.${key}`, parents);
      setOwn(out, key.startsWith('$') ? `$${key}` : key, encoded);
    }
    result = out;
  }
  parents.delete(value);
  return result;
}

function fromJson(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = fromJson(value[i]);
    return value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1) {
    const tag = keys[0] as string;
    const payload = record[tag];
    if (tag === BYTES_TAG && typeof payload === 'string')
      return new Uint8Array(Buffer.from(payload, 'base64'));
    if (tag === UNDEFINED_TAG) return undefined;
    if (tag === NUMBER_TAG && typeof payload === 'string') return payload === '-0' ? -0 : Number(payload);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const decoded = fromJson(record[key]);
    if (key.startsWith('$')) {
      if (!key.startsWith('$$')) throw new StoredBytesCorruptedError('JSON command', `unknown tag ${key}`);
      setOwn(out, key.slice(1), decoded);
    } else {
      setOwn(out, key, decoded);
    }
  }
  return out;
}

/** `target[key] = value` as an own data property, even for the key `__proto__`. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
