import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSmallValue, SMALL_READ_MAX_BYTES } from './lmdb-small-read.ts';
import { tempDir } from './test-support/storage-fixtures.ts';

describe('readSmallValue', () => {
  let dir: ReturnType<typeof tempDir>;
  let env: ReturnType<typeof open>;
  let db: ReturnType<typeof env.openDB<Uint8Array, Uint8Array>>;

  beforeEach(() => {
    dir = tempDir('small-read');
    env = open({ path: dir.path });
    db = env.openDB<Uint8Array, Uint8Array>({ name: 'values', keyEncoding: 'binary', encoding: 'binary' });
  });

  afterEach(async () => {
    await env.close();
    dir.remove();
  });

  it('returns exactly the stored bytes, in memory of their own that later reads do not overwrite', async () => {
    const a = Buffer.alloc(1100, 0xa1);
    const b = Buffer.alloc(700, 0xb2);
    await db.put(Buffer.from('a'), a);
    await db.put(Buffer.from('b'), b);
    const first = readSmallValue(db, Buffer.from('a'));
    const second = readSmallValue(db, Buffer.from('b'));
    // A view of lmdb-js's shared read buffer would now hold b's bytes (and a's length).
    expect(first).toStrictEqual(a);
    expect(second).toStrictEqual(b);
    expect(first?.buffer).not.toBe(db.getBinaryFast(Buffer.from('a'))?.buffer);
  });

  it('reads an absent key as undefined, an empty value as empty, and a value of the largest size', async () => {
    const largest = Buffer.alloc(SMALL_READ_MAX_BYTES);
    for (let i = 0; i < largest.length; i += 4096) largest[i] = (i / 4096) & 0xff;
    await db.put(Buffer.from('empty'), Buffer.alloc(0));
    await db.put(Buffer.from('largest'), largest);
    expect(readSmallValue(db, Buffer.from('missing'))).toBeUndefined();
    expect(readSmallValue(db, Buffer.from('empty'))).toStrictEqual(Buffer.alloc(0));
    // equals(), not toStrictEqual: a deep comparison of 1 MiB byte by byte takes seconds.
    expect(readSmallValue(db, Buffer.from('largest'))?.equals(largest)).toBe(true);
  });
});
