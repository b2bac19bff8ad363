import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { SDK_VERSION } from './version.ts';

it('SDK_VERSION matches package.json', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  expect(SDK_VERSION).toBe(pkg.version);
});
