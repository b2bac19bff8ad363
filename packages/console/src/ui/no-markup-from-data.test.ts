// The console shows names, headers and bodies that publishers wrote: it must only ever set text.
// Preact escapes text and attribute values; what would bypass that is setting HTML directly.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const UI = import.meta.dirname;
const RAW_HTML =
  /dangerouslySetInnerHTML|innerHTML|outerHTML|insertAdjacentHTML|document\.write|new Function|eval\(/;

describe('the console sources', () => {
  it('never set HTML from a string', async () => {
    const offenders: string[] = [];
    for (const entry of await readdir(UI, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !/\.tsx?$/.test(entry.name) || entry.name.endsWith('.test.ts')) continue;
      const text = await readFile(join(entry.parentPath, entry.name), 'utf8');
      if (RAW_HTML.test(text)) offenders.push(entry.name);
    }
    expect(offenders).toEqual([]);
  });
});
