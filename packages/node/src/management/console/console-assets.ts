/**
 * The console's script and stylesheet, built once per process on first request (esbuild, in
 * memory: @styx/console) and then served from memory with an ETag. A failed build is not kept:
 * the next request tries again (and the failure is logged with esbuild's reason).
 */
import { createHash } from 'node:crypto';
import type { ConsoleBundle } from '@styx/console';
import { buildConsoleBundle } from '@styx/console';
import type { Logger } from '../../logging/logger.ts';

/** One served file. */
export interface ConsoleAsset {
  readonly body: string;
  readonly contentType: string;
  /** A strong ETag of its content. */
  readonly etag: string;
}

export interface BuiltConsole {
  readonly script: ConsoleAsset;
  readonly styles: ConsoleAsset;
}

function asset(body: string, contentType: string): ConsoleAsset {
  return {
    body,
    contentType,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
  };
}

export class ConsoleAssets {
  private built: Promise<BuiltConsole> | undefined;
  private readonly logger: Logger;
  private readonly build: () => Promise<ConsoleBundle>;

  constructor(logger: Logger, build: () => Promise<ConsoleBundle> = buildConsoleBundle) {
    this.logger = logger;
    this.build = build;
  }

  /** The built console (building it on the first call; concurrent callers share one build). */
  get(): Promise<BuiltConsole> {
    if (this.built === undefined) {
      const started = performance.now();
      this.built = this.build().then(
        (bundle) => {
          this.logger.info(
            {
              inputs: bundle.inputs,
              bytes: bundle.script.length,
              ms: Math.round(performance.now() - started),
            },
            'built the web console',
          );
          return {
            script: asset(bundle.script, 'text/javascript; charset=utf-8'),
            styles: asset(bundle.styles, 'text/css; charset=utf-8'),
          };
        },
        (err: unknown) => {
          this.built = undefined;
          throw err;
        },
      );
    }
    return this.built;
  }
}
