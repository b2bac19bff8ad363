import type { Entry } from '../types.ts';
import { EntryType } from '../types.ts';
import { WireReader, WireWriter } from '../wire-buffer.ts';

/**
 * The simulator's replicated application: a key-value register map, with a body per value (the
 * stand-in for a queue's message bodies, so snapshots are big enough to travel in many chunks and a
 * corrupted transfer shows). Pure and deterministic, like the queue machine it stands in for.
 *
 * It also keeps a digest chained over every applied entry (index, term, type, data): two replicas
 * that applied the same prefix have the same digest, which the checker compares per index.
 */

const TAG_PUT = 1;
/** A command that changes nothing but must commit (the liveness probe). */
const TAG_PROBE = 2;

export type KvCommand =
  | {
      readonly kind: 'put';
      readonly opId: number;
      readonly key: number;
      readonly value: number;
      readonly bodyBytes: number;
    }
  | { readonly kind: 'probe'; readonly opId: number };

export function encodeKvCommand(command: KvCommand): Uint8Array {
  const w = new WireWriter(16 + (command.kind === 'put' ? command.bodyBytes : 0));
  if (command.kind === 'put') {
    w.u8(TAG_PUT);
    w.varint(command.opId);
    w.varint(command.key);
    w.varint(command.value);
    w.bytes(bodyOf(command.value, command.bodyBytes));
  } else {
    w.u8(TAG_PROBE);
    w.varint(command.opId);
  }
  return w.finish();
}

/** Decode a Normal entry's data; undefined for the leader's empty no-op. Throws on garbage. */
export function decodeKvCommand(data: Uint8Array): KvCommand | undefined {
  if (data.byteLength === 0) return undefined;
  const r = new WireReader(data);
  const tag = r.u8();
  if (tag === TAG_PROBE) {
    const opId = r.varint();
    r.end();
    return { kind: 'probe', opId };
  }
  if (tag !== TAG_PUT) throw new Error(`kv: unknown command tag ${tag}`);
  const opId = r.varint();
  const key = r.varint();
  const value = r.varint();
  const body = r.bytes();
  r.end();
  if (!bodyMatches(value, body)) throw new Error(`kv: body of value ${value} corrupted`);
  return { kind: 'put', opId, key, value, bodyBytes: body.byteLength };
}

/** The body bytes of a value: derived from the value, so any corruption is detectable. */
export function bodyOf(value: number, length: number): Uint8Array {
  const body = new Uint8Array(length);
  let x = (value * 2654435761) >>> 0;
  for (let i = 0; i < length; i++) {
    x = (Math.imul(x ^ (x >>> 13), 0x5bd1e995) + i) >>> 0;
    body[i] = x & 0xff;
  }
  return body;
}

function bodyMatches(value: number, body: Uint8Array): boolean {
  const expected = bodyOf(value, body.byteLength);
  for (let i = 0; i < body.byteLength; i++) if (body[i] !== expected[i]) return false;
  return true;
}

/** FNV-1a over a few numbers and bytes, 32 bits. */
export function mixDigest(
  digest: number,
  index: number,
  term: number,
  type: number,
  data: Uint8Array,
): number {
  let h = (digest ^ 0x811c9dc5) >>> 0;
  h = Math.imul(h ^ (index & 0xffff), 16777619);
  h = Math.imul(h ^ (index >>> 16), 16777619);
  h = Math.imul(h ^ term, 16777619);
  h = Math.imul(h ^ type, 16777619);
  for (let i = 0; i < data.byteLength; i++) h = Math.imul(h ^ (data[i] as number), 16777619);
  return h >>> 0;
}

interface Stored {
  readonly value: number;
  readonly body: Uint8Array;
}

export class KvMachine {
  #data = new Map<number, Stored>();
  appliedIndex = 0;
  digest = 0;

  /** Apply one committed entry (any type). Returns the applied command, if it was one. */
  apply(entry: Entry): KvCommand | undefined {
    if (entry.index !== this.appliedIndex + 1) {
      throw new Error(`kv: applying ${entry.index} after ${this.appliedIndex}`);
    }
    this.appliedIndex = entry.index;
    this.digest = mixDigest(this.digest, entry.index, entry.term, entry.type, entry.data);
    if (entry.type !== EntryType.Normal) return undefined;
    const command = decodeKvCommand(entry.data);
    if (command?.kind === 'put') {
      this.#data.set(command.key, { value: command.value, body: bodyOf(command.value, command.bodyBytes) });
    }
    return command;
  }

  /** The value of `key`, or 0 when never written. */
  get(key: number): number {
    return this.#data.get(key)?.value ?? 0;
  }

  /** Serialize the state: applied index, digest, then every key with its value and body. */
  snapshot(): Uint8Array {
    const w = new WireWriter(64 + this.#data.size * 48);
    w.varint(this.appliedIndex);
    w.varint(this.digest);
    const keys = [...this.#data.keys()].sort((a, b) => a - b);
    w.varint(keys.length);
    for (const key of keys) {
      const stored = this.#data.get(key) as Stored;
      w.varint(key);
      w.varint(stored.value);
      w.bytes(stored.body);
    }
    return w.finish();
  }

  /**
   * Replace the state with a snapshot taken at `index` (by `snapshot()` of some replica, or empty
   * data for the state of a new group). Throws on corruption.
   */
  restore(bytes: Uint8Array, index: number): void {
    if (bytes.byteLength === 0) {
      this.#data = new Map();
      this.appliedIndex = index;
      this.digest = 0;
      return;
    }
    const r = new WireReader(bytes);
    const appliedIndex = r.varint();
    const digest = r.varint();
    const count = r.varint();
    const data = new Map<number, Stored>();
    for (let i = 0; i < count; i++) {
      const key = r.varint();
      const value = r.varint();
      const body = r.bytes();
      if (!bodyMatches(value, body)) throw new Error(`kv: snapshot body of value ${value} corrupted`);
      data.set(key, { value, body });
    }
    r.end();
    if (appliedIndex !== index) throw new Error(`kv: snapshot of ${appliedIndex} restored as ${index}`);
    this.#data = data;
    this.appliedIndex = appliedIndex;
    this.digest = digest;
  }

  /** A hash of the key-value content (not of the history), to compare states across replicas. */
  stateHash(): number {
    let h = 0x811c9dc5;
    const keys = [...this.#data.keys()].sort((a, b) => a - b);
    for (const key of keys) {
      h = Math.imul(h ^ key, 16777619);
      h = Math.imul(h ^ (this.#data.get(key) as Stored).value, 16777619);
    }
    return h >>> 0;
  }
}
