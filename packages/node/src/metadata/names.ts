/**
 * Name rules shared by every declare. AMQP carries names as short strings, so RabbitMQ cannot
 * receive one longer than 255 bytes; Styx's protobuf strings can be any length, so the limit is
 * checked here. RabbitMQ answers bad names with 406 PRECONDITION_FAILED in the paths that check
 * them in the broker, so Styx uses 406 for every over-long name (vhost, exchange, queue) and
 * routing key, consistently. The reserved 'amq.' prefix is 403 ACCESS_REFUSED, as in RabbitMQ.
 */
import { ReplyCode } from '@styx/client/wire';
import { error } from './replies.ts';
import type { MetadataError } from './types.ts';

/** Longest name or routing key, in UTF-8 bytes (an AMQP short string). */
export const MAX_NAME_BYTES = 255;

/** Names with this prefix are reserved for the broker (standard exchanges, generated queue names). */
export const RESERVED_PREFIX = 'amq.';

/** UTF-8 length of `s` without allocating (a lone surrogate counts 3 bytes, as its U+FFFD would). */
export function utf8Length(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether `s` fits in an AMQP short string. */
export function fitsShortString(s: string): boolean {
  // Every UTF-16 unit is at most 3 UTF-8 bytes: short strings need no count.
  return s.length * 3 <= MAX_NAME_BYTES || utf8Length(s) <= MAX_NAME_BYTES;
}

/** 406 when `value` is longer than a short string; `what` is e.g. "queue name", "routing key". */
export function checkLength(what: string, value: string): MetadataError | undefined {
  if (fitsShortString(value)) return undefined;
  const shown = value.length > 64 ? `${value.slice(0, 64)}...` : value;
  return error(
    ReplyCode.PRECONDITION_FAILED,
    `${what} '${shown}' is too long: ${utf8Length(value)} bytes in UTF-8, at most ${MAX_NAME_BYTES}`,
  );
}

/** 403 for a client-chosen name with the reserved prefix (RabbitMQ's `check_name`). */
export function checkNotReserved(kind: 'exchange' | 'queue', name: string): MetadataError | undefined {
  if (!name.startsWith(RESERVED_PREFIX)) return undefined;
  return error(ReplyCode.ACCESS_REFUSED, `${kind} name '${name}' contains reserved prefix 'amq.*'`);
}
