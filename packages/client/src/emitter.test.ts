import { describe, expect, it } from 'vitest';
import { Emitter } from './emitter.ts';

type Events = { ping: [number]; error: [Error]; [event: string]: unknown[] };

describe('Emitter', () => {
  it('calls listeners in order with the arguments, once listeners once', () => {
    const e = new Emitter<Events>();
    const log: string[] = [];
    e.on('ping', (n) => log.push(`a${n}`));
    e.once('ping', (n) => log.push(`b${n}`));
    e.prependListener('ping', (n) => log.push(`first${n}`));
    expect(e.emit('ping', 1)).toBe(true);
    e.emit('ping', 2);
    expect(log).toEqual(['first1', 'a1', 'b1', 'first2', 'a2']);
    expect(e.listenerCount('ping')).toBe(2);
  });

  it('removes listeners, also during an emit without skipping others', () => {
    const e = new Emitter<Events>();
    const log: string[] = [];
    const b = (n: number) => log.push(`b${n}`);
    e.on('ping', () => {
      log.push('a');
      e.off('ping', b);
    });
    e.on('ping', b);
    e.emit('ping', 1);
    e.emit('ping', 2);
    expect(log).toEqual(['a', 'b1', 'a']);
    e.removeAllListeners();
    expect(e.emit('ping', 3)).toBe(false);
  });

  it('throws an unheard error, as Node does', () => {
    const e = new Emitter<Events>();
    const err = new Error('boom');
    expect(() => e.emit('error', err)).toThrow(err);
    e.on('error', () => {});
    expect(e.emit('error', err)).toBe(true);
  });
});
