// The browser bundle must build, and contain no Node built-ins (the build script fails if it does).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

it('scripts/build-browser.ts bundles src/browser.ts for browsers', () => {
  const output = execFileSync(process.execPath, ['scripts/build-browser.ts'], {
    cwd: packageRoot,
    encoding: 'utf8',
  });
  expect(output).toMatch(/wrote dist\/browser\/styx-client\.js/);
  const bundle = `${packageRoot}dist/browser/styx-client.js`;
  expect(existsSync(bundle)).toBe(true);
  const code = readFileSync(bundle, 'utf8');
  expect(code).toMatch(/export \{[^}]*\bconnect\b/);
  expect(code).not.toMatch(/from ["']node:|require\(["']node:|require\(["']ws["']\)/);
});
