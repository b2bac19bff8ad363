import { describe, expect, it } from 'vitest';
import { RepeatedText } from './repeated-text.ts';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('RepeatedText', () => {
  it('decodes UTF-8, and gives back the same string for the same bytes', () => {
    const text = new RepeatedText();
    const first = text.decode(utf8('node-2:run.1/1'));
    expect(first).toBe('node-2:run.1/1');
    expect(text.decode(utf8('node-2:run.1/1'))).toBe(first);
    expect(text.decode(utf8('ünïcode ✓'))).toBe('ünïcode ✓');
    expect(text.decode(new Uint8Array(0))).toBe('');
  });

  it('tells apart bytes of the same length', () => {
    const text = new RepeatedText();
    expect(text.decode(utf8('ctag-1'))).toBe('ctag-1');
    expect(text.decode(utf8('ctag-2'))).toBe('ctag-2');
    expect(text.decode(utf8('ctag-1'))).toBe('ctag-1');
  });

  it('is not fooled by the frame its last bytes came from being reused', () => {
    const text = new RepeatedText();
    const frame = utf8('group-a');
    expect(text.decode(frame)).toBe('group-a');
    frame.set(utf8('group-b'));
    expect(text.decode(frame)).toBe('group-b');
  });

  it('refuses bytes that are not UTF-8, also after they followed a good decode', () => {
    const text = new RepeatedText();
    expect(() => text.decode(Uint8Array.of(0xff, 0xfe))).toThrow(TypeError);
    expect(text.decode(utf8('ok'))).toBe('ok');
    expect(() => text.decode(Uint8Array.of(0xc3, 0x28))).toThrow(TypeError);
    expect(text.decode(utf8('ok'))).toBe('ok');
  });

  it('decodes fields too long to keep every time', () => {
    const text = new RepeatedText();
    const long = 'x'.repeat(1000);
    expect(text.decode(utf8(long))).toBe(long);
    expect(text.decode(utf8(long))).toBe(long);
    expect(text.decode(utf8(`${'x'.repeat(999)}y`))).toBe(`${'x'.repeat(999)}y`);
  });
});

describe('RepeatedText.decodeAt', () => {
  it('decodes a field inside larger bytes, the same string for the same field elsewhere', () => {
    const text = new RepeatedText();
    const frame = utf8('xxctag-1yyctag-1zctag-2');
    const first = text.decodeAt(frame, 2, 8);
    expect(first).toBe('ctag-1');
    expect(text.decodeAt(frame, 10, 16)).toBe(first);
    expect(text.decodeAt(frame, 17, 23)).toBe('ctag-2');
    expect(text.decodeAt(frame, 0, 0)).toBe('');
    expect(text.decode(utf8('ctag-2'))).toBe(text.decodeAt(frame, 17, 23));
  });

  it('refuses bytes that are not UTF-8 between good ones', () => {
    const text = new RepeatedText();
    const frame = Uint8Array.of(0x6f, 0x6b, 0xc3, 0x28, 0x6f, 0x6b);
    expect(text.decodeAt(frame, 0, 2)).toBe('ok');
    expect(() => text.decodeAt(frame, 2, 4)).toThrow(TypeError);
    expect(text.decodeAt(frame, 4, 6)).toBe('ok');
  });

  it('decodes with the decoder it was given (lenient: replacement characters)', () => {
    const text = new RepeatedText((bytes, start, end) => Buffer.from(bytes).toString('utf8', start, end));
    const frame = Uint8Array.of(0x61, 0xff, 0x62);
    expect(text.decodeAt(frame, 0, 3)).toBe('a\uFFFDb');
    expect(text.decodeAt(frame, 0, 3)).toBe('a\uFFFDb');
  });
});
