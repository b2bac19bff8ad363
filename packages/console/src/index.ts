// The operator's web console: Preact pages (src/ui/) that the management listener serves at `/`.
// The node builds them with esbuild on the first request for the script and keeps the result in
// memory, so a fresh clone needs no build step and no bundle is committed.

export type { ConsoleBundle } from './bundle.ts';
export { buildConsoleBundle, ConsoleBuildError } from './bundle.ts';
export { CONSOLE_SCRIPT_PATH, CONSOLE_STYLES_PATH, consolePage } from './page.ts';
