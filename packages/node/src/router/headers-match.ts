/**
 * Headers exchanges, as RabbitMQ 3.10+ (rabbit_exchange_type_headers):
 *
 * - `x-match` in the binding arguments is `all` (the default), `any`, `all-with-x` or `any-with-x`;
 *   any other string, or a non-string, is refused at bind time (406).
 * - The pattern is the binding's other arguments. Keys starting with `x-` are left out of the
 *   pattern unless the mode is `all-with-x` / `any-with-x`; `x-match` itself always is.
 * - A pattern value of type void matches on the header's presence alone.
 * - `all`: every pattern key present with an equal value (an empty pattern matches everything).
 *   `any`: at least one (an empty pattern matches nothing).
 * - Values compare as Erlang's `==` on RabbitMQ's decoded values: every integer width, float,
 *   double and timestamp compare as numbers (an i8 5 equals a long 5 and a double 5.0); strings
 *   compare by content (short, long and byte arrays alike); booleans as booleans; decimals by scale
 *   and digits; arrays and tables type-exactly. Values of different classes never match
 *   (the string '5' is not the number 5).
 * - Duplicate keys: the first occurrence counts, in the pattern and in the headers.
 */

import type { FieldTable, FieldValue, FieldValueKind } from '@styx/client/wire';
import { fieldValueEquals, fieldValueKind, fieldValuePayload, tableGet } from '@styx/client/wire';
import { typeName, valueText } from '../metadata/field-values.ts';
import type { BindingEntry } from '../metadata/state.ts';
import type { RouteContext } from './route-context.ts';
import type { RoutingIndex } from './routing-index.ts';

export type HeadersMatchMode = 'all' | 'any' | 'all-with-x' | 'any-with-x';

const MODES: readonly HeadersMatchMode[] = ['all', 'any', 'all-with-x', 'any-with-x'];

export interface HeadersPattern {
  /** True for all / all-with-x, false for any / any-with-x. */
  readonly requireAll: boolean;
  /** Keys to compare, first occurrence only; `value` undefined = presence only (void in the binding). */
  readonly pairs: readonly { readonly key: string; readonly value: FieldValue | undefined }[];
}

/** Parses binding arguments into a pattern, or returns the refusal text (406 PRECONDITION_FAILED). */
export function parseHeadersPattern(args: FieldTable): HeadersPattern | string {
  let mode: HeadersMatchMode = 'all';
  const xMatch = tableGet(args, 'x-match');
  if (xMatch !== undefined) {
    const kind = fieldValueKind(xMatch);
    if (kind !== 'longStr' && kind !== 'shortStr') {
      return `Invalid x-match field type ${typeName(xMatch)} (value ${valueText(xMatch)}); expected longstr`;
    }
    const s = fieldValuePayload(xMatch, kind);
    if (!(MODES as readonly string[]).includes(s)) {
      return `Invalid x-match field value <<"${s}">>; expected all, any, all-with-x, or any-with-x`;
    }
    mode = s as HeadersMatchMode;
  }
  const withX = mode === 'all-with-x' || mode === 'any-with-x';
  const seen = new Set<string>();
  const pairs: { key: string; value: FieldValue | undefined }[] = [];
  for (const { key, value } of args.entries) {
    if (key === 'x-match' || (!withX && key.startsWith('x-')) || seen.has(key)) continue;
    seen.add(key);
    pairs.push({ key, value: fieldValueKind(value) === 'void' ? undefined : value });
  }
  return { requireAll: mode === 'all' || mode === 'all-with-x', pairs };
}

/** Whether a message's headers (undefined = none) match a binding pattern. */
export function headersMatch(pattern: HeadersPattern, headers: FieldTable | undefined): boolean {
  const pairs = pattern.pairs;
  if (pattern.requireAll) {
    for (let i = 0; i < pairs.length; i++) {
      const pair = pairs[i] as HeadersPattern['pairs'][number];
      const actual = tableGet(headers, pair.key);
      if (actual === undefined) return false;
      if (pair.value !== undefined && !headerValueEquals(pair.value, actual)) return false;
    }
    return true;
  }
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i] as HeadersPattern['pairs'][number];
    const actual = tableGet(headers, pair.key);
    if (actual !== undefined && (pair.value === undefined || headerValueEquals(pair.value, actual)))
      return true;
  }
  return false;
}

type ValueClass = 'number' | 'string' | 'bytes' | 'other';

function classOf(kind: FieldValueKind | undefined): ValueClass {
  switch (kind) {
    case 'i8':
    case 'u8':
    case 'i16':
    case 'u16':
    case 'i32':
    case 'u32':
    case 'i64':
    case 'u64':
    case 'f32':
    case 'f64':
    case 'timestamp':
      return 'number';
    case 'shortStr':
    case 'longStr':
      return 'string';
    case 'byteArray':
      return 'bytes';
    default:
      return 'other';
  }
}

const utf8 = new TextEncoder();

function bytesEqualString(bytes: Uint8Array, s: string): boolean {
  const encoded = utf8.encode(s);
  if (encoded.length !== bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== encoded[i]) return false;
  return true;
}

/** A binding value against a header value (see the module comment for the rules). */
export function headerValueEquals(pattern: FieldValue, actual: FieldValue): boolean {
  const kp = fieldValueKind(pattern);
  const ka = fieldValueKind(actual);
  if (kp === undefined || ka === undefined) return false;
  if (kp === ka) return fieldValueEquals(pattern, actual);
  const cp = classOf(kp);
  const ca = classOf(ka);
  if (cp === 'number' && ca === 'number') {
    return (fieldValuePayload(pattern, kp) as number) === (fieldValuePayload(actual, ka) as number);
  }
  if (cp === 'string' && ca === 'string') {
    return (fieldValuePayload(pattern, kp) as string) === (fieldValuePayload(actual, ka) as string);
  }
  // RabbitMQ holds strings and byte arrays alike as Erlang binaries.
  if (cp === 'bytes' && ca === 'string') {
    return bytesEqualString(fieldValuePayload(pattern, 'byteArray'), fieldValuePayload(actual, ka) as string);
  }
  if (cp === 'string' && ca === 'bytes') {
    return bytesEqualString(fieldValuePayload(actual, 'byteArray'), fieldValuePayload(pattern, kp) as string);
  }
  return false;
}

/** Headers exchanges: every binding is a candidate; its pattern (parsed at bind time) decides. */
export class HeadersIndex implements RoutingIndex {
  private readonly entries = new Set<BindingEntry>();

  get size(): number {
    return this.entries.size;
  }

  add(entry: BindingEntry): void {
    this.entries.add(entry);
  }

  remove(entry: BindingEntry): void {
    this.entries.delete(entry);
  }

  match(ctx: RouteContext, _routingKeys: readonly string[], headers: FieldTable | undefined): void {
    for (const entry of this.entries) {
      if (entry.headers !== undefined && headersMatch(entry.headers, headers)) ctx.collect(entry);
    }
  }
}
