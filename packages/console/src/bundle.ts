/**
 * Builds the console's browser bundle (src/ui/main.tsx and the CSS it imports) with esbuild, in
 * memory: one ESM script with Preact inside and one stylesheet. Nothing is written to disk and
 * nothing is fetched: every input is in this package or its node_modules (the machine may be
 * offline, so no CDN either).
 */
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The built console, ready to serve. */
export interface ConsoleBundle {
  readonly script: string;
  readonly styles: string;
  /** Source files that went in (for the log line). */
  readonly inputs: number;
}

/** esbuild refused the console's sources (a broken checkout): the console cannot be served. */
export class ConsoleBuildError extends Error {
  readonly code = 'CONSOLE_BUILD_FAILED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConsoleBuildError';
  }
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** Bundle the console (about 0.3 s on one core). */
export async function buildConsoleBundle(): Promise<ConsoleBundle> {
  let result: Awaited<ReturnType<typeof build<{ write: false; metafile: true }>>>;
  try {
    result = await build({
      absWorkingDir: packageRoot,
      entryPoints: ['src/ui/main.tsx'],
      outdir: 'out',
      write: false,
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      minify: true,
      legalComments: 'none',
      metafile: true,
      logLevel: 'silent',
    });
  } catch (err) {
    throw new ConsoleBuildError(`the console bundle did not build: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const script = result.outputFiles.find((f) => f.path.endsWith('.js'));
  const styles = result.outputFiles.find((f) => f.path.endsWith('.css'));
  if (script === undefined || styles === undefined) {
    throw new ConsoleBuildError('the console bundle lacks its script or stylesheet');
  }
  return { script: script.text, styles: styles.text, inputs: Object.keys(result.metafile.inputs).length };
}
