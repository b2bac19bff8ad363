import { syntaxError } from './codec-error.ts';

/**
 * Reads a content header's property flags for a class with `count` properties (at most 15) and
 * returns the first flag word. Property i is bit 15 - i; bit 0 says another flag word follows.
 * Continuation words are read and must be empty, as must the bits past `count` in the first: a
 * flag for a property the spec does not define leaves its value's type (and so where the next
 * one starts) unknown, so it is a 502 SYNTAX_ERROR rather than something to skip.
 */
export function readPropertyFlags(
  r: { short(): number; classId: number; methodId: number },
  count: number,
): number {
  const first = r.short();
  const unknown = ((1 << (16 - count)) - 1) & ~1 & first;
  if (unknown !== 0) {
    throw syntaxError(`content header sets undefined property flags 0x${unknown.toString(16)}`);
  }
  let word = first;
  while ((word & 1) !== 0) {
    word = r.short();
    if ((word & ~1) !== 0) {
      throw syntaxError(`content header sets undefined property flags 0x${word.toString(16)} (continued)`);
    }
  }
  return first & ~1;
}
