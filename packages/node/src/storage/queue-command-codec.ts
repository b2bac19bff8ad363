/**
 * The binary codec of queue commands, for the durable logs of queues (one `enqueue` entry per
 * published message per queue: the hot path).
 *
 * An entry is [u8 tag][fields]. Tags are persisted: never renumber or reuse one; a changed
 * variant gets a new tag (and the old one keeps decoding). Tag 0 is never used.
 *
 * - `enqueue` (tag 1) is hand-written: [varint size][ttl][StoredMessage encoding], ttl being
 *   [u8 0] (undefined), [u8 1][varint] (a safe non-negative integer, the usual case) or
 *   [u8 2][f64]. The message encoding is written straight into the entry (one buffer, the body
 *   copied once) and remembered, so the body store stores the same bytes when the entry is applied.
 *   An enqueue carrying a dead-letter hand-off id has tag 14 and the id first:
 *   [varint n][source UTF-8][varint messageId][varint horizon], then the same fields as tag 1.
 * - Every other variant is a row of `VARIANTS`: its tag and its fields in order, each with a kind
 *   (below). Adding a variant is one row; the `satisfies` clause makes the build fail while a
 *   variant of `QueueCommand` has no row, or a row names a field the variant lacks.
 *
 * Decoded commands have every field of their variant as an own property (an optional field that
 * was undefined is present and undefined), so live apply and replay see the same objects.
 */
import type { HandOffId } from '@styx/dlx';
import type { CommandCodec } from '@styx/raft';
import type { QueueCommand, QueueConfig } from '../queue/types.ts';
import { pretendOlder } from '../test-support/pretend-older.ts';
import { ByteCursor, checkVarint, utf8Size, varintSize, writeString, writeVarint } from './binary.ts';
import { StoredBytesCorruptedError } from './errors.ts';
import {
  DeferredMessage,
  decodeStoredMessage,
  measureStoredMessage,
  rememberEncoding,
  writeStoredMessage,
} from './stored-message-codec.ts';

/** How one field is written. */
type FieldKind =
  /** [varint n][UTF-8] */
  | 'string'
  /** varint (a non-negative safe integer) */
  | 'uint'
  /** one byte, 0 or 1 */
  | 'bool'
  /** [varint count][varint id]… */
  | 'ids'
  /** [u8 0] undefined, or [u8 1][f64] */
  | 'optNumber'
  /** [u8 0] undefined, or [u8 1][varint n][UTF-8] */
  | 'optString'
  /** the fields of a `QueueConfig`, in `CONFIG_FIELDS` order */
  | 'config';

/** The kinds a field of type V may be written as. */
type KindFor<V> = [V] extends [string]
  ? 'string'
  : [V] extends [number]
    ? 'uint'
    : [V] extends [boolean]
      ? 'bool'
      : [V] extends [readonly number[]]
        ? 'ids'
        : [V] extends [number | undefined]
          ? 'optNumber'
          : [V] extends [string | undefined]
            ? 'optString' | 'string'
            : [V] extends [QueueConfig]
              ? 'config'
              : never;

/** A [field name, kind] pair of object type T (any field but `type`). */
type FieldSpec<T> = { [P in Exclude<keyof T, 'type'>]: readonly [P, KindFor<T[P]>] }[Exclude<
  keyof T,
  'type'
>];

type Variant<K extends QueueCommand['type']> = Extract<QueueCommand, { type: K }>;
type GenericType = Exclude<QueueCommand['type'], 'enqueue'>;

interface VariantSpec<T> {
  readonly tag: number;
  readonly fields: readonly FieldSpec<T>[];
}

const ENQUEUE_TAG = 1;
/** An enqueue with a hand-off id (a dead-lettered copy sent at-least-once). */
const ENQUEUE_HAND_OFF_TAG = 14;
/** An enqueue with a publish id (a publish forwarded to the queue's leader, deduplicated). */
const ENQUEUE_PUBLISH_TAG = 15;
/** An enqueue with a publish id taken only in order (`ordered`); same fields as tag 15. */
const ENQUEUE_ORDERED_PUBLISH_TAG = 19;

/**
 * The newest tag a build of the previous cluster protocol version decodes: a node pretending to be
 * one (test-support/pretend-older.ts) refuses later tags as that build would, so a rolling-upgrade
 * test sees an entry proposed before its feature flag was enabled.
 */
const PRETEND_OLDER_LAST_TAG = 19;

/** Every variant but enqueue, by type. Tags are persisted: append new rows with new tags. */
const VARIANTS = {
  consume: {
    tag: 2,
    fields: [
      ['owner', 'string'],
      ['tag', 'string'],
      ['prefetch', 'uint'],
      ['noAck', 'bool'],
      ['exclusive', 'bool'],
    ],
  },
  cancel: {
    tag: 3,
    fields: [
      ['owner', 'string'],
      ['tag', 'string'],
    ],
  },
  settle: {
    tag: 4,
    fields: [
      ['owner', 'string'],
      ['ids', 'ids'],
    ],
  },
  return: {
    tag: 5,
    fields: [
      ['owner', 'string'],
      ['ids', 'ids'],
    ],
  },
  discard: {
    tag: 6,
    fields: [
      ['owner', 'string'],
      ['ids', 'ids'],
    ],
  },
  get: {
    tag: 7,
    fields: [
      ['owner', 'string'],
      ['noAck', 'bool'],
    ],
  },
  expire: { tag: 8, fields: [] },
  purge: { tag: 9, fields: [] },
  ownerDown: { tag: 10, fields: [['owner', 'string']] },
  touch: { tag: 11, fields: [] },
  setConfig: { tag: 12, fields: [['config', 'config']] },
  deadLetterSettled: { tag: 13, fields: [['ids', 'ids']] },
  suspendOwner: { tag: 17, fields: [['owner', 'string']] },
  resumeOwner: { tag: 18, fields: [['owner', 'string']] },
  // 14 and 15 are the enqueue variants with an id.
  remove: { tag: 16, fields: [['ids', 'ids']] },
  // 19 is the ordered publish's enqueue variant.
  setDedupeWindow: { tag: 20, fields: [['maxIdsPerSource', 'uint']] },
} as const satisfies { readonly [K in GenericType]: VariantSpec<Variant<K>> };

/** The fields of a QueueConfig, in the order they are written. Enums are written as strings. */
const CONFIG_FIELDS = [
  ['messageTtl', 'optNumber'],
  ['expires', 'optNumber'],
  ['maxLength', 'optNumber'],
  ['maxLengthBytes', 'optNumber'],
  ['overflow', 'string'],
  ['deliveryLimit', 'optNumber'],
  ['deadLetterExchange', 'optString'],
  ['deadLetterRoutingKey', 'optString'],
  ['deadLetterStrategy', 'string'],
] as const satisfies readonly FieldSpec<QueueConfig>[];

// The build fails here when QueueConfig gains a field CONFIG_FIELDS does not write.
type MissingConfigFields = Exclude<keyof QueueConfig, (typeof CONFIG_FIELDS)[number][0]>;
const configFieldsComplete: [MissingConfigFields] extends [never] ? true : MissingConfigFields = true;
void configFieldsComplete;

interface Row {
  readonly type: GenericType;
  readonly tag: number;
  readonly fields: readonly (readonly [string, FieldKind])[];
}

const ROWS_BY_TYPE = new Map<string, Row>();
const ROWS_BY_TAG: (Row | undefined)[] = [];
for (const [type, spec] of Object.entries(VARIANTS) as [GenericType, VariantSpec<unknown>][]) {
  const row: Row = { type, tag: spec.tag, fields: spec.fields as Row['fields'] };
  if (
    row.tag === ENQUEUE_TAG ||
    row.tag === ENQUEUE_HAND_OFF_TAG ||
    row.tag === ENQUEUE_PUBLISH_TAG ||
    row.tag === ENQUEUE_ORDERED_PUBLISH_TAG ||
    ROWS_BY_TAG[row.tag] !== undefined
  )
    throw new Error(`queue command tag ${row.tag} reused`);
  ROWS_BY_TYPE.set(type, row);
  ROWS_BY_TAG[row.tag] = row;
}

/** The persisted tag of each command type (for tests and diagnostics). */
export const QUEUE_COMMAND_TAGS: Readonly<Record<QueueCommand['type'], number>> = {
  enqueue: ENQUEUE_TAG,
  ...(Object.fromEntries([...ROWS_BY_TYPE].map(([type, row]) => [type, row.tag])) as Record<
    GenericType,
    number
  >),
};

type EnqueueCommand = Variant<'enqueue'>;

const TTL_UNDEFINED = 0;
const TTL_VARINT = 1;
const TTL_FLOAT = 2;

/** The enqueue's encoding, starting at byte `headroom` of the result (see `encodeWithHeadroom`). */
function encodeEnqueue(command: EnqueueCommand, headroom: number): Uint8Array {
  const { size, ttl, message } = command;
  // At most one id: a hand-off's wins (a dead-lettered copy is never also a publish).
  const handOff = command.handOff ?? command.publishId;
  const idTag =
    command.handOff !== undefined
      ? ENQUEUE_HAND_OFF_TAG
      : command.ordered === true
        ? ENQUEUE_ORDERED_PUBLISH_TAG
        : ENQUEUE_PUBLISH_TAG;
  checkVarint(size, 'enqueue size');
  const ttlIsVarint = ttl !== undefined && Number.isSafeInteger(ttl) && ttl >= 0;
  const ttlSize = ttl === undefined ? 1 : ttlIsVarint ? 1 + varintSize(ttl) : 9;
  const measured = measureStoredMessage(message);
  let handOffSize = 0;
  let sourceSize = 0;
  if (handOff !== undefined) {
    checkVarint(handOff.messageId, 'hand-off messageId');
    checkVarint(handOff.horizon, 'hand-off horizon');
    sourceSize = utf8Size(handOff.source);
    handOffSize =
      varintSize(sourceSize) + sourceSize + varintSize(handOff.messageId) + varintSize(handOff.horizon);
  }
  const headerSize = 1 + handOffSize + varintSize(size) + ttlSize;
  const buf = Buffer.allocUnsafe(headroom + headerSize + measured.size);
  let pos = headroom + 1;
  if (handOff === undefined) {
    buf[headroom] = ENQUEUE_TAG;
  } else {
    buf[headroom] = idTag;
    pos = writeString(buf, pos, handOff.source, sourceSize);
    pos = writeVarint(buf, pos, handOff.messageId);
    pos = writeVarint(buf, pos, handOff.horizon);
  }
  pos = writeVarint(buf, pos, size);
  if (ttl === undefined) {
    buf[pos++] = TTL_UNDEFINED;
  } else if (ttlIsVarint) {
    buf[pos++] = TTL_VARINT;
    pos = writeVarint(buf, pos, ttl);
  } else {
    buf[pos++] = TTL_FLOAT;
    pos = buf.writeDoubleBE(ttl, pos);
  }
  writeStoredMessage(buf, pos, measured);
  rememberEncoding(message, buf.subarray(pos));
  return buf;
}

function encodeCommand(command: QueueCommand, headroom: number): Uint8Array {
  if (command.type === 'enqueue') return encodeEnqueue(command, headroom);
  const row = ROWS_BY_TYPE.get(command.type);
  if (row === undefined) throw new TypeError(`no codec for queue command ${String(command.type)}`);
  const source = command as unknown as Record<string, unknown>;
  const buf = Buffer.allocUnsafe(headroom + 1 + fieldsSize(source, row.fields));
  buf[headroom] = row.tag;
  writeFields(buf, headroom + 1, source, row.fields);
  return buf;
}

function decodeEnqueue(
  r: ByteCursor,
  deferred: boolean,
  handOff: HandOffId | undefined,
  publishId?: HandOffId,
  ordered = false,
): EnqueueCommand {
  const size = r.varint();
  const ttlKind = r.u8();
  let ttl: number | undefined;
  if (ttlKind === TTL_VARINT) ttl = r.varint();
  else if (ttlKind === TTL_FLOAT) ttl = r.f64();
  else if (ttlKind !== TTL_UNDEFINED)
    throw new StoredBytesCorruptedError('enqueue entry', `bad ttl kind ${ttlKind}`);
  const message = deferred
    ? new DeferredMessage(r.rest(), 'enqueue entry')
    : decodeStoredMessage(r.rest(), 'enqueue entry');
  if (publishId === undefined) return { type: 'enqueue', size, ttl, message, handOff };
  return ordered
    ? { type: 'enqueue', size, ttl, message, publishId, ordered: true }
    : { type: 'enqueue', size, ttl, message, publishId };
}

// ---------------------------------------------------------------------------------- generic rows

type Fields = readonly (readonly [string, FieldKind])[];

function fieldsSize(source: Record<string, unknown>, fields: Fields): number {
  let size = 0;
  for (const [name, kind] of fields) size += fieldSize(source[name], kind, name);
  return size;
}

function fieldSize(value: unknown, kind: FieldKind, name: string): number {
  switch (kind) {
    case 'string': {
      const n = utf8Size(value as string);
      return varintSize(n) + n;
    }
    case 'uint':
      checkVarint(value as number, name);
      return varintSize(value as number);
    case 'bool':
      return 1;
    case 'ids': {
      const ids = value as readonly number[];
      let size = varintSize(ids.length);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i] as number;
        checkVarint(id, name);
        size += varintSize(id);
      }
      return size;
    }
    case 'optNumber':
      return value === undefined ? 1 : 9;
    case 'optString':
      return value === undefined ? 1 : 1 + fieldSize(value, 'string', name);
    case 'config':
      return fieldsSize(value as Record<string, unknown>, CONFIG_FIELDS);
  }
}

function writeFields(buf: Buffer, pos: number, source: Record<string, unknown>, fields: Fields): number {
  for (const [name, kind] of fields) pos = writeField(buf, pos, source[name], kind);
  return pos;
}

function writeField(buf: Buffer, pos: number, value: unknown, kind: FieldKind): number {
  switch (kind) {
    case 'string':
      return writeString(buf, pos, value as string, utf8Size(value as string));
    case 'uint':
      return writeVarint(buf, pos, value as number);
    case 'bool':
      buf[pos] = value === true ? 1 : 0;
      return pos + 1;
    case 'ids': {
      const ids = value as readonly number[];
      pos = writeVarint(buf, pos, ids.length);
      for (let i = 0; i < ids.length; i++) pos = writeVarint(buf, pos, ids[i] as number);
      return pos;
    }
    case 'optNumber':
      if (value === undefined) {
        buf[pos] = 0;
        return pos + 1;
      }
      buf[pos] = 1;
      return buf.writeDoubleBE(value as number, pos + 1);
    case 'optString':
      if (value === undefined) {
        buf[pos] = 0;
        return pos + 1;
      }
      buf[pos] = 1;
      return writeField(buf, pos + 1, value, 'string');
    case 'config':
      return writeFields(buf, pos, value as Record<string, unknown>, CONFIG_FIELDS);
  }
}

function readFields(r: ByteCursor, target: Record<string, unknown>, fields: Fields): void {
  for (const [name, kind] of fields) target[name] = readField(r, kind);
}

function readField(r: ByteCursor, kind: FieldKind): unknown {
  switch (kind) {
    case 'string':
      return r.string();
    case 'uint':
      return r.varint();
    case 'bool':
      return r.bool();
    case 'ids': {
      const count = r.varint();
      // Each id takes at least one byte: a larger count is corruption, not an allocation.
      if (count > r.remaining) throw new StoredBytesCorruptedError('queue command', `id count ${count}`);
      const ids: number[] = new Array(count);
      for (let i = 0; i < count; i++) ids[i] = r.varint();
      return ids;
    }
    case 'optNumber':
      return r.bool() ? r.f64() : undefined;
    case 'optString':
      return r.bool() ? r.string() : undefined;
    case 'config': {
      const config: Record<string, unknown> = {};
      readFields(r, config, CONFIG_FIELDS);
      return config;
    }
  }
}

/**
 * Enqueues decoded from bytes another node forwarded (`decodeForwarded`), and those bytes with the
 * headroom before them: proposed as they arrived instead of encoded again (the body is not copied
 * a second time on the leader's way into the log). Taken once; weak, so an enqueue refused before
 * it was proposed leaves nothing behind.
 */
const forwardedEncodings = new WeakMap<
  QueueCommand,
  { readonly bytes: Uint8Array; readonly headroom: number }
>();

/**
 * Decode a command forwarded over the queue link. When `headroom` bytes before `bytes` in its
 * buffer are free to overwrite (the link frame's own header, already read), an enqueue keeps its
 * bytes for `encodeWithHeadroom`, which then returns them with the log's entry header written in
 * that room. Safe to propose as they came: the decoder accepted them, and every replica decodes
 * the log with the same codec (an encoding some replica lacks is only sent once a feature flag
 * enabled it cluster-wide).
 */
export function decodeForwarded(bytes: Uint8Array, headroom: number): QueueCommand {
  const command = queueCommandCodec.decode(bytes);
  if (command.type === 'enqueue' && headroom > 0 && bytes.byteOffset >= headroom) {
    forwardedEncodings.set(command, {
      bytes: new Uint8Array(bytes.buffer, bytes.byteOffset - headroom, headroom + bytes.byteLength),
      headroom,
    });
  }
  return command;
}

export const queueCommandCodec: CommandCodec<QueueCommand> = {
  encode(command: QueueCommand): Uint8Array {
    return encodeCommand(command, 0);
  },

  encodeWithHeadroom(command: QueueCommand, headroom: number): Uint8Array {
    const forwarded = forwardedEncodings.get(command);
    if (forwarded !== undefined) {
      forwardedEncodings.delete(command);
      // Room to spare: the entry starts `headroom` bytes before the command's own bytes.
      if (forwarded.headroom >= headroom) {
        const start = forwarded.headroom - headroom;
        return forwarded.bytes.subarray(start);
      }
    }
    return encodeCommand(command, headroom);
  },

  decode(bytes: Uint8Array): QueueCommand {
    return decodeCommand(bytes, false);
  },

  // An enqueue's message as a `DeferredMessage`: a follower stores it, and decodes it only if it
  // leads and delivers it (see stored-message-codec.ts).
  decodeEntry(bytes: Uint8Array): QueueCommand {
    return decodeCommand(bytes, true);
  },
};

function decodeCommand(bytes: Uint8Array, deferred: boolean): QueueCommand {
  const r = new ByteCursor(bytes, 'queue command');
  const tag = r.u8();
  if (tag === ENQUEUE_TAG) return decodeEnqueue(r, deferred, undefined);
  if (tag === ENQUEUE_HAND_OFF_TAG) {
    const handOff: HandOffId = { source: sourceOf(r), messageId: r.varint(), horizon: r.varint() };
    return decodeEnqueue(r, deferred, handOff);
  }
  if (tag === ENQUEUE_PUBLISH_TAG || tag === ENQUEUE_ORDERED_PUBLISH_TAG) {
    const publishId: HandOffId = { source: sourceOf(r), messageId: r.varint(), horizon: r.varint() };
    return decodeEnqueue(r, deferred, undefined, publishId, tag === ENQUEUE_ORDERED_PUBLISH_TAG);
  }
  const row = ROWS_BY_TAG[tag];
  if (row === undefined || (pretendOlder.on && tag > PRETEND_OLDER_LAST_TAG))
    throw new StoredBytesCorruptedError('queue command', `unknown tag ${tag}`);
  const command: Record<string, unknown> = { type: row.type };
  readFields(r, command, row.fields);
  r.end();
  return command as unknown as QueueCommand;
}

/**
 * The last source decoded (a hand-off's queue, a publish's node run) and its bytes: consecutive
 * enqueues nearly always name the same one, so its string is made once, not once per message.
 */
let lastSourceBytes: Buffer | undefined;
let lastSource = '';

/** A hand-off or publish id's source: [varint n][UTF-8], as `ByteCursor.string` reads it. */
function sourceOf(r: ByteCursor): string {
  const bytes = r.bytes(r.varint());
  if (lastSourceBytes?.equals(bytes)) return lastSource;
  lastSource = bytes.toString('utf8');
  lastSourceBytes = Buffer.from(bytes); // a copy: the entry's bytes are not kept alive by this
  return lastSource;
}
