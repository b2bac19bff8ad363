import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../queue/types.ts';
import { StoredBytesCorruptedError } from './errors.ts';
import { decodeStoredMessage, encodeStoredMessage } from './stored-message-codec.ts';

function message(exchange: string, routingKey: string, body: string): StoredMessage {
  return { exchange, routingKey, properties: {}, body: new TextEncoder().encode(body), bcc: undefined };
}

describe('stored message codec: exchange and routing key of a run of messages', () => {
  it('decodes each message its own names, whether they repeat the last ones or not', () => {
    const names: [string, string][] = [
      ['amq.direct', 'q-1'],
      ['amq.direct', 'q-1'],
      ['', 'q-1'],
      ['', 'q-2'],
      ['ëx', ''],
      ['amq.direct', 'q-1'],
    ];
    names.forEach(([exchange, routingKey], i) => {
      const decoded = decodeStoredMessage(encodeStoredMessage(message(exchange, routingKey, `m-${i}`)));
      expect(decoded).toMatchObject({ exchange, routingKey });
      expect(new TextDecoder().decode(decoded.body)).toBe(`m-${i}`);
    });
  });

  it('reads bytes that are not UTF-8 as replacement characters, as before, also on a repeat', () => {
    // [format 1][exchange: 1 byte 0xff][routing key: "a", 0xfe][no properties][no bcc][body "b"]
    const bytes = Uint8Array.of(1, 1, 0xff, 2, 0x61, 0xfe, 0, 0, 0x62);
    for (let i = 0; i < 2; i++) {
      const decoded = decodeStoredMessage(bytes);
      expect(decoded.exchange).toBe(Buffer.of(0xff).toString('utf8'));
      expect(decoded.routingKey).toBe(Buffer.of(0x61, 0xfe).toString('utf8'));
    }
  });

  it('refuses a name that runs past the bytes', () => {
    expect(() => decodeStoredMessage(Uint8Array.of(1, 5, 0x61))).toThrow(StoredBytesCorruptedError);
    expect(() => decodeStoredMessage(Uint8Array.of(1, 0, 4, 0x61))).toThrow(StoredBytesCorruptedError);
  });
});
