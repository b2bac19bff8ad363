import type { BasicProperties } from '@styx/client/wire';
import { DEFAULT_MAX_MESSAGE_SIZE } from '../../session/message-size.ts';
import { AmqpReader } from './amqp-reader.ts';
import { frameError, unexpectedFrame } from './codec-error.ts';
import type { RawFrame } from './frame-parser.ts';
import { FrameType } from './frame-parser.ts';
import { readBasicAck, readBasicPublish } from './hot-path.ts';
import type { AmqpMethod } from './spec.gen.ts';
import { decodeBasicProperties, decodeMethodFields, METHOD_DEFS } from './spec.gen.ts';

/** A complete AMQP command: a method, with its content when it carries one. */
export type AmqpCommand =
  | { kind: 'method'; channel: number; method: AmqpMethod }
  | {
      kind: 'content';
      channel: number;
      method: AmqpMethod;
      properties: BasicProperties;
      /** The header's property bytes (flags and values) as received, to pass on without re-encoding. */
      propertiesBytes: Buffer;
      body: Buffer;
      /**
       * The declared body size when it was over the maximum: the body was read and dropped (`body`
       * is empty), and the channel refuses the message with 406 PRECONDITION_FAILED.
       */
      oversize?: number;
    }
  | { kind: 'heartbeat' };

/** Options of a CommandAssembler. */
export interface CommandAssemblerOptions {
  /**
   * Largest body kept, in bytes (default: max_message_size's default, DEFAULT_MAX_MESSAGE_SIZE): a
   * larger one is read and dropped, never buffered, and its command completes `oversize` so that
   * the channel refuses it (406, as RabbitMQ does).
   */
  maxBodySize?: number;
}

interface PendingContent {
  method: AmqpMethod;
  classId: number;
  methodId: number;
  /** -1 until the content header has come. */
  bodySize: number;
  received: number;
  /** Body frames as they came (views of their chunks), while they are few. */
  fragments: Buffer[];
  /** Past MAX_FRAGMENTS: the body so far, copied, in a buffer grown by doubling up to bodySize. */
  gathered: Buffer | undefined;
  /** The declared size is over maxBodySize: body frames are counted, not kept. */
  dropping: boolean;
  properties: BasicProperties;
  propertiesBytes: Buffer;
}

const CONTENT_METHODS: ReadonlySet<number> = new Set(
  METHOD_DEFS.filter((d) => d.content).map((d) => d.classId * 65536 + d.methodId),
);

const EMPTY = Buffer.alloc(0);

const HEARTBEAT: AmqpCommand = Object.freeze({ kind: 'heartbeat' });

/**
 * Body frames kept as views before they are gathered into one buffer: a peer sending a large body
 * in tiny frames would otherwise hold one Buffer object (~100 B) per byte or so of its body.
 */
const MAX_FRAGMENTS = 64;
/** The first gathering buffer's smallest size, bytes. */
const MIN_GATHER_BYTES = 64 * 1024;

/**
 * Turns frames into commands, as RabbitMQ's rabbit_command_assembler does: a method frame is a
 * command by itself unless its method carries content, in which case a content header and then
 * body frames up to the header's body size must follow on the same channel (other channels'
 * frames may interleave). Out-of-order frames are 505 UNEXPECTED_FRAME; undecodable fields, a
 * body frame beyond the declared size and a declared size over maxBodySize are 501 FRAME_ERROR —
 * RabbitMQ's codes for each. Errors carry the class and method that failed.
 */
export class CommandAssembler {
  private readonly maxBodySize: number;
  private readonly pending = new Map<number, PendingContent>();
  private readonly reader = new AmqpReader();

  constructor(options: CommandAssemblerOptions = {}) {
    this.maxBodySize = options.maxBodySize ?? DEFAULT_MAX_MESSAGE_SIZE;
  }

  /** Channels with a content-carrying method still waiting for its header or body. */
  get channelsMidContent(): number {
    return this.pending.size;
  }

  /** Forgets a channel's half-received content (when the channel closes). */
  dropChannel(channel: number): void {
    this.pending.delete(channel);
  }

  /** Takes one frame; returns the command it completes, if any. */
  push(frame: RawFrame): AmqpCommand | undefined {
    return this.pushParts(frame.type, frame.channel, frame.payload, 0, frame.payload.length);
  }

  /**
   * Takes one frame as a FrameParser's sink gets it (its payload is `buf[start, end)`, read in
   * place: only a body and a header's property bytes are kept, as views); returns the command it
   * completes, if any.
   */
  pushParts(type: number, channel: number, buf: Buffer, start: number, end: number): AmqpCommand | undefined {
    switch (type) {
      case FrameType.METHOD:
        return this.method(channel, buf, start, end);
      case FrameType.HEADER:
        return this.header(channel, buf, start, end);
      case FrameType.BODY:
        return this.body(channel, start === 0 && end === buf.length ? buf : buf.subarray(start, end));
      case FrameType.HEARTBEAT:
        return HEARTBEAT;
      default:
        throw frameError(`unknown frame type ${type}`);
    }
  }

  private method(channel: number, buf: Buffer, start: number, end: number): AmqpCommand | undefined {
    const waiting = this.pending.get(channel);
    if (waiting !== undefined) {
      const what = waiting.bodySize < 0 ? 'content header' : 'content body';
      throw unexpectedFrame(
        `expected ${what} for ${waiting.method.name} on channel ${channel}, got a method frame`,
        waiting.classId,
        waiting.methodId,
      );
    }
    if (end - start < 4) throw frameError(`method frame of ${end - start} bytes has no method id`);
    const classId = buf.readUInt16BE(start);
    const methodId = buf.readUInt16BE(start + 2);
    const id = classId * 65536 + methodId;
    let method: AmqpMethod;
    if (id === 60 * 65536 + 40) method = { name: 'basic.publish', args: readBasicPublish(buf, start, end) };
    else if (id === 60 * 65536 + 80) method = { name: 'basic.ack', args: readBasicAck(buf, start, end) };
    else {
      const r = this.reader.reset(buf, start + 4, end, classId, methodId);
      method = decodeMethodFields(r, classId, methodId);
      if (r.remaining !== 0) {
        throw frameError(`${method.name} has ${r.remaining} bytes after its fields`, classId, methodId);
      }
    }
    if (!CONTENT_METHODS.has(id)) return { kind: 'method', channel, method };
    this.pending.set(channel, {
      method,
      classId,
      methodId,
      bodySize: -1,
      received: 0,
      fragments: [],
      gathered: undefined,
      dropping: false,
      properties: {},
      propertiesBytes: EMPTY,
    });
    return undefined;
  }

  private header(channel: number, buf: Buffer, start: number, end: number): AmqpCommand | undefined {
    const p = this.pending.get(channel);
    if (p === undefined || p.bodySize >= 0) {
      throw unexpectedFrame(
        p === undefined
          ? `content header on channel ${channel} with no content method before it`
          : `expected content body for ${p.method.name} on channel ${channel}, got a content header`,
        p?.classId ?? 0,
        p?.methodId ?? 0,
      );
    }
    const r = this.reader.reset(buf, start, end, p.classId, p.methodId);
    const classId = r.short();
    const weight = r.short();
    if (classId !== p.classId || weight !== 0) {
      throw unexpectedFrame(
        `expected content header for class ${p.classId} (weight 0), got class ${classId} weight ${weight}`,
        p.classId,
        p.methodId,
      );
    }
    r.need(8, 'body size');
    // Check the high word first: a declared size beyond 2^53 is refused, never rounded.
    const high = buf.readUInt32BE(r.pos);
    const bodySize = high * 0x1_0000_0000 + buf.readUInt32BE(r.pos + 4);
    r.pos += 8;
    if (high > 0x1f_ffff) {
      throw frameError('content body size > 2^53 cannot be represented', p.classId, p.methodId);
    }
    // Over the maximum: read the body and drop it, so that only the channel is refused (406), as
    // RabbitMQ refuses an oversized message, and the connection's framing stays intact.
    p.dropping = bodySize > this.maxBodySize;
    const propertiesStart = r.pos;
    p.properties = decodeBasicProperties(r);
    if (r.remaining !== 0) {
      throw frameError(`content header has ${r.remaining} bytes after its properties`, p.classId, p.methodId);
    }
    p.propertiesBytes = buf.subarray(propertiesStart, end);
    p.bodySize = bodySize;
    return bodySize === 0 ? this.complete(channel, p) : undefined;
  }

  private body(channel: number, payload: Buffer): AmqpCommand | undefined {
    const p = this.pending.get(channel);
    if (p === undefined || p.bodySize < 0) {
      throw unexpectedFrame(
        p === undefined
          ? `content body on channel ${channel} with no content method before it`
          : `expected content header for ${p.method.name} on channel ${channel}, got a content body`,
        p?.classId ?? 0,
        p?.methodId ?? 0,
      );
    }
    if (payload.length > p.bodySize - p.received) {
      throw frameError('content body frame exceeds remaining content size', p.classId, p.methodId);
    }
    if (p.dropping) {
      // counted below, never kept
    } else if (p.gathered === undefined && p.fragments.length < MAX_FRAGMENTS) p.fragments.push(payload);
    else gather(p, payload);
    p.received += payload.length;
    return p.received === p.bodySize ? this.complete(channel, p) : undefined;
  }

  private complete(channel: number, p: PendingContent): AmqpCommand {
    this.pending.delete(channel);
    const command: AmqpCommand = {
      kind: 'content',
      channel,
      method: p.method,
      properties: p.properties,
      propertiesBytes: p.propertiesBytes,
      body: p.dropping ? EMPTY : bodyOf(p),
    };
    if (p.dropping) command.oversize = p.bodySize;
    return command;
  }
}

/** The body received for `p`, as one buffer (the one frame's own bytes when it came in one). */
function bodyOf(p: PendingContent): Buffer {
  if (p.gathered !== undefined) return p.gathered.subarray(0, p.bodySize);
  if (p.fragments.length === 0) return EMPTY;
  if (p.fragments.length === 1) return p.fragments[0] as Buffer;
  return Buffer.concat(p.fragments, p.bodySize);
}

/**
 * Copies `payload` after the body received so far into `p.gathered`, which grows by doubling (never
 * past the declared body size): memory follows the bytes that came, not the size a header claims,
 * and each byte is copied O(1) times on average.
 */
function gather(p: PendingContent, payload: Buffer): void {
  const needed = p.received + payload.length;
  let buffer = p.gathered;
  if (buffer === undefined || buffer.length < needed) {
    const grown = Buffer.allocUnsafe(Math.min(p.bodySize, Math.max(2 * needed, MIN_GATHER_BYTES)));
    if (buffer !== undefined) buffer.copy(grown, 0, 0, p.received);
    else {
      let at = 0;
      for (const fragment of p.fragments) at += fragment.copy(grown, at);
      p.fragments = [];
    }
    buffer = grown;
    p.gathered = grown;
  }
  payload.copy(buffer, p.received);
}
