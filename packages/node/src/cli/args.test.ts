import { describe, expect, it } from 'vitest';
import { parse, UsageError, withoutLeadingSeparator } from './args.ts';

const SERVER_LIKE = { port: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

describe('withoutLeadingSeparator', () => {
  it('drops a `--` in front of everything else (pnpm 10 hands it on from `pnpm start -- …`)', () => {
    expect(withoutLeadingSeparator(['--', '--port', '5690'])).toEqual(['--port', '5690']);
    expect(withoutLeadingSeparator(['--'])).toEqual([]);
  });

  it('keeps everything else, including a second or a later `--`', () => {
    expect(withoutLeadingSeparator([])).toEqual([]);
    expect(withoutLeadingSeparator(['--port', '1', '--', 'x'])).toEqual(['--port', '1', '--', 'x']);
    expect(withoutLeadingSeparator(['--', '--', 'x'])).toEqual(['--', 'x']);
    expect(withoutLeadingSeparator(['---'])).toEqual(['---']);
  });
});

describe('parse', () => {
  it('reads the flags after a leading `--` as flags', () => {
    expect(parse(['--', '--port', '5690', '-h'], SERVER_LIKE).values).toEqual({ port: '5690', help: true });
    expect(parse(['--'], SERVER_LIKE).values).toEqual({});
  });

  it('with positionals allowed, a leading `--` is dropped and a later one still ends the flags', () => {
    const { values, positionals } = parse(['--', 'list', '--port', '1', '--', '--help'], SERVER_LIKE, true);
    expect(values).toEqual({ port: '1' });
    expect(positionals).toEqual(['list', '--help']);
  });

  it.each([
    [['--', '--no-such-flag'], /'--no-such-flag'/],
    [['--', 'stray'], /'stray'/],
    [['--', '--port', '1', 'stray'], /'stray'/],
    [['--port', '1', '--', '--help'], /'--help'/],
    [['--', '--', '--port', '1'], /'--port'/],
    [['--', '--port'], /--port/],
  ])('still refuses %j with a UsageError', (args, message) => {
    expect(() => parse(args, SERVER_LIKE)).toThrow(UsageError);
    expect(() => parse(args, SERVER_LIKE)).toThrow(message);
  });
});
