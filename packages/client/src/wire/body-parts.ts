// Bodies larger than one frame: split into BodyPart frames on send, joined again on receipt (see
// proto/styx.proto: a method's `body_size`, then BodyPart frames on its channel adding up to it).
// Shared by the broker and the SDK, so both sides cut and check bodies the same way.
import { markBatchRoom } from './batch-room.ts';
import { batchEntrySize } from './codec.ts';
import { tableGet, tableSet } from './field-table.ts';
import { ReplyCode } from './reply-codes.ts';
import { FrameType } from './schema.ts';
import type { FieldTable } from './types.ts';
import { WireError } from './wire-error.ts';
import { alloc, varint32Size, writeVarint32 } from './wire-writer.ts';

/** The capability (in client and server properties' `capabilities`) of a peer that takes body parts. */
export const BODY_PARTS_CAPABILITY = 'body_parts';

/** Whether `properties` (a peer's client or server properties) announce the `body_parts` capability. */
export function announcesBodyParts(properties: FieldTable | null | undefined): boolean {
  const capabilities = tableGet(properties, 'capabilities')?.table;
  return tableGet(capabilities, BODY_PARTS_CAPABILITY)?.bool === true;
}

/** `properties` announcing the `body_parts` capability too (added to its `capabilities` table). */
export function withBodyPartsCapability(properties: FieldTable): FieldTable {
  const capabilities = tableGet(properties, 'capabilities')?.table ?? { entries: [] };
  return tableSet(properties, 'capabilities', {
    table: tableSet(capabilities, BODY_PARTS_CAPABILITY, { bool: true }),
  });
}

/** The tag of Frame.body_part (field 80, length-delimited). */
const BODY_PART_TAG = ((FrameType.fields.bodyPart?.id ?? 0) << 3) | 2;

/**
 * Bytes a BodyPart frame adds around its data, at most, in a batch: the batch entry's tag and
 * length (1 + 5), the channel (1 + 3: channels are at most 65535), the method's tag and length
 * (2 + 5) and the data's tag and length (1 + 5).
 */
const BODY_PART_OVERHEAD = 23;

/** The most body bytes one BodyPart carries when batches are at most `frameMax` bytes. */
export function bodyPartCapacity(frameMax: number): number {
  return frameMax - BODY_PART_OVERHEAD;
}

const EMPTY = new Uint8Array(0);

/**
 * The frames of a method carrying `body` to a peer that takes body parts: `encode(body, 0)`, the
 * method with its body, when that fits in a batch of `frameMax`; else `encode(empty, body.length)`,
 * the method declaring `body_size`, and the body's BodyPart frames. `otherBytes` bounds the rest of
 * the method (properties, names): below it nothing is measured, so small messages are encoded once.
 */
export function encodeWithBody(
  channel: number,
  body: Uint8Array,
  frameMax: number,
  otherBytes: number,
  encode: (body: Uint8Array, bodySize: number) => Uint8Array,
): Uint8Array | Uint8Array[] {
  if (body.length + otherBytes + BODY_PART_OVERHEAD <= frameMax) return encode(body, 0);
  const header = encode(EMPTY, body.length);
  // The whole method is the header with the body field for the body_size one (as long), give or
  // take its length varint.
  if (batchEntrySize(header.length + body.length + 4) <= frameMax) return encode(body, 0);
  return [header, ...encodeBodyParts(channel, body, frameMax)];
}

/**
 * Bytes a method with these strings (UTF-16 units, at most 3 UTF-8 bytes each) and `properties`
 * encoded bytes takes besides its body, at most: 64 covers its other fields and tags. (Three string
 * parameters, not a rest one: this runs for every delivery and allocates nothing.)
 */
export function otherBytesBound(properties: Uint8Array | undefined, a = '', b = '', c = ''): number {
  return (properties?.length ?? 0) + 3 * (a.length + b.length + c.length) + 64;
}

/**
 * The BodyPart frames of `body` on `channel`, each at most `bodyPartCapacity(frameMax)` bytes of
 * data: the bytes protobufjs writes for them, each allocated with room for its batch prefix in
 * front, so sending one alone in a batch costs no second copy.
 */
export function encodeBodyParts(channel: number, body: Uint8Array, frameMax: number): Uint8Array[] {
  const capacity = bodyPartCapacity(frameMax);
  if (capacity <= 0) throw new RangeError(`frameMax ${frameMax} leaves no room for a body part`);
  const parts: Uint8Array[] = [];
  for (let start = 0; start < body.length; start += capacity) {
    parts.push(encodeBodyPart(channel, body.subarray(start, Math.min(body.length, start + capacity))));
  }
  return parts;
}

function encodeBodyPart(channel: number, data: Uint8Array): Uint8Array {
  const inner = 1 + varint32Size(data.length) + data.length;
  const frameLength =
    (channel === 0 ? 0 : 1 + varint32Size(channel)) +
    varint32Size(BODY_PART_TAG) +
    varint32Size(inner) +
    inner;
  const room = 1 + varint32Size(frameLength);
  const out = alloc(room + frameLength);
  let p = room;
  if (channel !== 0) {
    out[p++] = 0x08;
    p = writeVarint32(out, p, channel);
  }
  p = writeVarint32(out, p, BODY_PART_TAG);
  p = writeVarint32(out, p, inner);
  out[p++] = 0x0a;
  p = writeVarint32(out, p, data.length);
  out.set(data, p);
  return markBatchRoom(out.subarray(room));
}

/**
 * Joins one body from its parts, for one channel: `start` with the size a method declared, `add`
 * each BodyPart's data. Holds the parts as they came (views into their batches) and copies them
 * once, into the body, when the last arrives; what it holds is never more than the declared size.
 */
export class BodyAssembler {
  #parts: Uint8Array[] = [];
  #received = 0;
  #expected = 0;

  /** Whether a body is being received (a method declared it and parts are still to come). */
  get assembling(): boolean {
    return this.#expected > 0;
  }

  /** Bytes still to come. */
  get remaining(): number {
    return this.#expected - this.#received;
  }

  /** A method declared a body of `size` (> 0) bytes in parts. */
  start(size: number): void {
    if (this.assembling) throw unexpected('a new body began before the last one was complete');
    if (!Number.isSafeInteger(size) || size <= 0) {
      throw new WireError(ReplyCode.FRAME_ERROR, `body_size ${size} is not a length`);
    }
    this.#expected = size;
    this.#received = 0;
    this.#parts = [];
  }

  /**
   * The next part's data: the whole body once its last part came, undefined before. Throws
   * WireError 505 UNEXPECTED_FRAME when no body was declared, 501 FRAME_ERROR when the parts add
   * up to more than was declared.
   */
  add(data: Uint8Array): Uint8Array | undefined {
    if (!this.assembling) throw unexpected('a body part came with no method declaring a body before it');
    const remaining = this.remaining;
    if (data.length > remaining) {
      const declared = this.#expected;
      this.reset();
      throw new WireError(
        ReplyCode.FRAME_ERROR,
        `body part of ${data.length} bytes exceeds the ${remaining} bytes remaining of a ${declared}-byte body`,
      );
    }
    if (data.length > 0) this.#parts.push(data);
    this.#received += data.length;
    if (this.#received < this.#expected) return undefined;
    const body = join(this.#parts, this.#expected);
    this.reset();
    return body;
  }

  /** Forget the body under way. */
  reset(): void {
    this.#parts = [];
    this.#received = 0;
    this.#expected = 0;
  }
}

function unexpected(text: string): WireError {
  return new WireError(ReplyCode.UNEXPECTED_FRAME, text);
}

function join(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = alloc(length);
  let p = 0;
  for (const part of parts) {
    out.set(part, p);
    p += part.length;
  }
  return out;
}
