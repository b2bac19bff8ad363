// Bundles the browser entry (src/browser.ts) into dist/browser/styx-client.js: one ESM file with
// protobufjs inside, no Node built-ins (a `node:` import or `ws` would fail the build).
// Run: pnpm --filter @styx/client build:browser
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(
    'Usage: node scripts/build-browser.ts\n\nBundles src/browser.ts into dist/browser/styx-client.js (ESM, for browsers).',
  );
  process.exit(0);
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

const result = await build({
  absWorkingDir: packageRoot,
  entryPoints: ['src/browser.ts'],
  outfile: 'dist/browser/styx-client.js',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  sourcemap: true,
  minify: false,
  metafile: true,
  logLevel: 'warning',
  // protobufjs probes for optional Node modules at run time behind guards; nothing else may be Node's.
  external: [],
});

const inputs = Object.keys(result.metafile.inputs);
const forbidden = inputs.filter((p) => p.startsWith('node:') || /[\\/]ws[\\/]/.test(p));
if (forbidden.length > 0) {
  console.error(`the browser bundle pulled in Node-only modules: ${forbidden.join(', ')}`);
  process.exit(1);
}
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(
  `wrote dist/browser/styx-client.js (${inputs.length} inputs, ${bytes} bytes with its source map)`,
);
