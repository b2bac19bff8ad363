import { describe, expect, it } from 'vitest';
import { positiveIntOption } from './int-option.ts';

function fail(message: string): never {
  throw new Error(message);
}

describe('positiveIntOption', () => {
  it('takes a positive integer, or the fallback when absent', () => {
    expect(positiveIntOption('5000', 1, 'rate', fail)).toBe(5000);
    expect(positiveIntOption(undefined, 4, 'seconds', fail)).toBe(4);
  });

  it('refuses zero, negatives, fractions and words, naming the option', () => {
    for (const bad of ['0', '-3', '1.5', 'many', '', '1e400']) {
      expect(() => positiveIntOption(bad, 1, 'rate', fail)).toThrow(
        `--rate must be a positive integer, got '${bad}'`,
      );
    }
  });
});
