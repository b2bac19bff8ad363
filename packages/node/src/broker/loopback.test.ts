import { describe, expect, it } from 'vitest';
import { isLoopbackAddress } from './loopback.ts';

describe('isLoopbackAddress', () => {
  it('accepts the loopback ranges', () => {
    for (const a of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(a)).toBe(true);
  });
  it('refuses everything else', () => {
    for (const a of ['10.0.0.1', '192.168.1.1', '::ffff:10.0.0.1', 'fe80::1', '128.0.0.1', 'localhost', '']) {
      expect(isLoopbackAddress(a)).toBe(false);
    }
  });
});
