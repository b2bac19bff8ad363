import type { FieldEntry } from '@styx/client/wire';

/**
 * Field-table key order as RabbitMQ writes it: `rabbit_misc:sort_field_table` sorts a table by key,
 * and Erlang compares binaries byte by byte, so keys are in UTF-8 byte order. That is code point
 * order, which differs from JS's UTF-16 `<` only when a key holds characters above U+FFFF next to
 * ones in U+E000..U+FFFF (a surrogate 0xD800.. sorts before 0xE000 in UTF-16, after it in UTF-8).
 *
 * Example: ['x-num', 'x-death', 'x-app'] sorts to ['x-app', 'x-death', 'x-num'].
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/**
 * Maps a UTF-16 code unit so that comparing ranks orders strings by code point: surrogates
 * (D800..DFFF, i.e. code points >= 0x10000) move above E000..FFFF.
 */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  if (unit <= 0xdfff) return unit + 0x2000;
  return unit - 0x800;
}

/** Sorts entries in place by key ({@link compareKeys}); stable, so duplicate keys keep their order. */
export function sortEntriesByKey(entries: FieldEntry[]): FieldEntry[] {
  return entries.sort((p, q) => compareKeys(p.key, q.key));
}
