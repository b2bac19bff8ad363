import type { FieldTable, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { DEFAULT_QUEUE_CONFIG } from '../queue/types.ts';
import { MAX_EXPIRY_MS, queueConfigFromArguments, validateExpiration } from './queue-arguments.ts';

function args(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

function config(entries: Record<string, FieldValue>, durable = false) {
  const r = queueConfigFromArguments(args(entries), durable);
  if (!r.ok) throw new Error(r.text);
  return r.config;
}

function refusal(entries: Record<string, FieldValue>): string {
  const r = queueConfigFromArguments(args(entries), true, { vhost: '/', name: 'q' });
  if (r.ok) throw new Error('expected a refusal');
  expect(r.code).toBe(406);
  return r.text;
}

describe('queueConfigFromArguments', () => {
  it('gives the defaults for no arguments, with the strategy chosen by durability', () => {
    expect(config({})).toEqual(DEFAULT_QUEUE_CONFIG);
    expect(config({}, true)).toEqual({ ...DEFAULT_QUEUE_CONFIG, deadLetterStrategy: 'at-least-once' });
    const r = queueConfigFromArguments(undefined, false);
    expect(r.ok && r.config).toEqual(DEFAULT_QUEUE_CONFIG);
  });

  it('reads every supported argument', () => {
    expect(
      config({
        'x-message-ttl': { i32: 1000 },
        'x-expires': { u32: 60_000 },
        'x-max-length': { i64: 10 },
        'x-max-length-bytes': { u16: 4096 },
        'x-overflow': { longStr: 'reject-publish' },
        'x-delivery-limit': { i8: 3 },
        'x-dead-letter-exchange': { longStr: 'dlx' },
        'x-dead-letter-routing-key': { shortStr: 'dead' },
        'x-dead-letter-strategy': { longStr: 'at-least-once' },
      }),
    ).toEqual({
      messageTtl: 1000,
      expires: 60_000,
      maxLength: 10,
      maxLengthBytes: 4096,
      overflow: 'reject-publish',
      deliveryLimit: 3,
      deadLetterExchange: 'dlx',
      deadLetterRoutingKey: 'dead',
      deadLetterStrategy: 'at-least-once',
    });
  });

  it('accepts every integer width for integer arguments', () => {
    for (const kind of ['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64'] as const) {
      expect(config({ 'x-max-length': { [kind]: 7 } as unknown as FieldValue }).maxLength).toBe(7);
    }
  });

  it('x-message-ttl: 0..2^32-1', () => {
    expect(config({ 'x-message-ttl': { i32: 0 } }).messageTtl).toBe(0);
    expect(config({ 'x-message-ttl': { i64: MAX_EXPIRY_MS } }).messageTtl).toBe(MAX_EXPIRY_MS);
    expect(refusal({ 'x-message-ttl': { i32: -1 } })).toBe(
      "invalid arg 'x-message-ttl' for queue 'q' in vhost '/': {value_negative,-1}",
    );
    expect(refusal({ 'x-message-ttl': { i64: MAX_EXPIRY_MS + 1 } })).toContain('{value_too_large,4294967296');
    expect(refusal({ 'x-message-ttl': { longStr: '1000' } })).toContain('{unacceptable_type,longstr}');
    expect(refusal({ 'x-message-ttl': { f64: 1000 } })).toContain('{unacceptable_type,double}');
  });

  it('x-expires: positive, at most 2^32-1', () => {
    expect(config({ 'x-expires': { i32: 1 } }).expires).toBe(1);
    expect(refusal({ 'x-expires': { i32: 0 } })).toContain('{value_zero,0}');
    expect(refusal({ 'x-expires': { i32: -5 } })).toContain('{value_negative,-5}');
    expect(refusal({ 'x-expires': { i64: 2 ** 33 } })).toContain('value_too_large');
    expect(refusal({ 'x-expires': { bool: true } })).toContain('{unacceptable_type,bool}');
  });

  it('x-max-length, x-max-length-bytes, x-delivery-limit: non-negative integers', () => {
    for (const key of ['x-max-length', 'x-max-length-bytes', 'x-delivery-limit']) {
      expect(queueConfigFromArguments(args({ [key]: { i32: 0 } }), false).ok).toBe(true);
      expect(refusal({ [key]: { i32: -1 } })).toBe(
        `invalid arg '${key}' for queue 'q' in vhost '/': {value_negative,-1}`,
      );
      expect(refusal({ [key]: { longStr: '5' } })).toContain('{unacceptable_type,longstr}');
    }
    expect(config({ 'x-delivery-limit': { i32: 0 } }).deliveryLimit).toBe(0);
  });

  it('x-overflow: one of the three modes', () => {
    for (const mode of ['drop-head', 'reject-publish', 'reject-publish-dlx'] as const) {
      expect(config({ 'x-overflow': { longStr: mode } }).overflow).toBe(mode);
    }
    expect(refusal({ 'x-overflow': { longStr: 'drop-tail' } })).toContain(
      '{invalid_overflow,<<"drop-tail">>}',
    );
    expect(refusal({ 'x-overflow': { i32: 1 } })).toContain('{unacceptable_type,signedint}');
  });

  it('x-dead-letter-exchange: a string, empty meaning the default exchange', () => {
    expect(config({ 'x-dead-letter-exchange': { longStr: '' } }).deadLetterExchange).toBe('');
    expect(refusal({ 'x-dead-letter-exchange': { i32: 1 } })).toContain('{unacceptable_type,signedint}');
  });

  it('x-dead-letter-routing-key: a string, only with a dead-letter exchange', () => {
    expect(refusal({ 'x-dead-letter-routing-key': { longStr: 'k' } })).toBe(
      "invalid arg 'x-dead-letter-routing-key' for queue 'q' in vhost '/': routing_key_but_no_dlx_defined",
    );
    expect(
      refusal({ 'x-dead-letter-exchange': { longStr: 'd' }, 'x-dead-letter-routing-key': { bool: false } }),
    ).toContain('unacceptable_type');
  });

  it('x-dead-letter-strategy: at-most-once or at-least-once', () => {
    expect(config({ 'x-dead-letter-strategy': { longStr: 'at-most-once' } }, true).deadLetterStrategy).toBe(
      'at-most-once',
    );
    expect(config({ 'x-dead-letter-strategy': { longStr: 'at-least-once' } }, false).deadLetterStrategy).toBe(
      'at-least-once',
    );
    expect(refusal({ 'x-dead-letter-strategy': { longStr: 'exactly-once' } })).toContain(
      'invalid_dead_letter_strategy',
    );
  });

  it('x-queue-type: quorum and classic, not stream', () => {
    expect(queueConfigFromArguments(args({ 'x-queue-type': { longStr: 'quorum' } }), true).ok).toBe(true);
    expect(queueConfigFromArguments(args({ 'x-queue-type': { longStr: 'classic' } }), true).ok).toBe(true);
    expect(refusal({ 'x-queue-type': { longStr: 'stream' } })).toContain(
      "queue type 'stream' is not supported",
    );
    expect(refusal({ 'x-queue-type': { i32: 1 } })).toContain('unacceptable_type');
  });

  it('type-checks x-max-priority, x-single-active-consumer and x-queue-mode, and ignores unknown x- arguments', () => {
    expect(
      config({
        'x-max-priority': { u8: 255 },
        'x-single-active-consumer': { bool: true },
        'x-queue-mode': { longStr: 'lazy' },
      }),
    ).toEqual(DEFAULT_QUEUE_CONFIG);
    expect(refusal({ 'x-max-priority': { i32: 256 } })).toContain('{max_value_exceeded,256}');
    expect(refusal({ 'x-max-priority': { i32: -1 } })).toContain('value_negative');
    expect(refusal({ 'x-single-active-consumer': { longStr: 'true' } })).toContain(
      '{unacceptable_type,longstr}',
    );
    expect(refusal({ 'x-queue-mode': { longStr: 'eager' } })).toContain('invalid_queue_mode');
    expect(
      config({ 'x-max-age': { longStr: '1D' }, 'x-whatever': { table: { entries: [] } }, plain: { i8: 1 } }),
    ).toEqual(DEFAULT_QUEUE_CONFIG);
  });

  it('omits the queue from the text when not named', () => {
    const r = queueConfigFromArguments(args({ 'x-expires': { i32: 0 } }), true);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.text).toBe("invalid arg 'x-expires': {value_zero,0}");
  });
});

describe('validateExpiration', () => {
  it('accepts decimal integers 0..2^32-1', () => {
    expect(validateExpiration('0')).toBe(0);
    expect(validateExpiration('-0')).toBe(0);
    expect(validateExpiration('60000')).toBe(60_000);
    expect(validateExpiration('+5')).toBe(5);
    expect(validateExpiration('4294967295')).toBe(MAX_EXPIRY_MS);
  });

  it('refuses anything else with 406 "invalid expiration"', () => {
    const cases: [string, string][] = [
      ['', "invalid expiration '': no_integer"],
      ['abc', "invalid expiration 'abc': no_integer"],
      [' 5', "invalid expiration ' 5': no_integer"],
      ['5 ', `invalid expiration '5 ': {leftover_string," "}`],
      ['1.5', `invalid expiration '1.5': {leftover_string,".5"}`],
      ['-1', "invalid expiration '-1': {value_negative,-1}"],
      ['4294967296', "invalid expiration '4294967296': {value_too_large,4294967296}"],
      [
        '99999999999999999999999',
        "invalid expiration '99999999999999999999999': {value_too_large,99999999999999999999999}",
      ],
    ];
    for (const [input, text] of cases) {
      expect(validateExpiration(input)).toEqual({ code: 406, text });
    }
  });
});
