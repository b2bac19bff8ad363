// Builds what `pnpm pack` puts in the package for applications (package.json's publishConfig points
// there): dist/esm (JavaScript and .d.ts from tsc, one file per source, ES2022 so Node >= 18 and
// browsers run it), dist/cjs (index.cjs and wire.cjs, bundled by esbuild for require(); ws and
// protobufjs stay dependencies) and the browser bundle (scripts/build-browser.ts). Inside the monorepo
// nothing uses these: the packages import the .ts sources, which Node 24 runs directly.
// Run: pnpm --filter @styx/client build:package (pnpm pack runs it first, as prepack).
import { execFileSync } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(
    'Usage: node scripts/build-package.ts\n\nBuilds dist/esm, dist/cjs and dist/browser: the files `pnpm pack` ships.',
  );
  process.exit(0);
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

await rm(`${packageRoot}/dist/esm`, { recursive: true, force: true });
await rm(`${packageRoot}/dist/cjs`, { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: packageRoot, stdio: 'inherit' });
// tsc rewrites the .ts extensions of relative imports in the JavaScript, not in the declarations;
// an application's TypeScript looks for the .js names there.
for (const entry of await readdir(`${packageRoot}/dist/esm`, { recursive: true })) {
  if (!entry.endsWith('.d.ts')) continue;
  const file = `${packageRoot}/dist/esm/${entry}`;
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace(/((?:from |import\()'\.{1,2}\/[^']*)\.ts'/g, "$1.js'"));
}

await build({
  absWorkingDir: packageRoot,
  entryPoints: { index: 'src/index.ts', wire: 'src/wire/index.ts' },
  outdir: 'dist/cjs',
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node18',
  sourcemap: true,
  logLevel: 'warning',
  // The package's dependencies, installed beside it by the application's package manager.
  external: ['ws', 'protobufjs', 'bufferutil'],
});

execFileSync(process.execPath, ['scripts/build-browser.ts'], { cwd: packageRoot, stdio: 'inherit' });
console.log('wrote dist/esm, dist/cjs and dist/browser');
