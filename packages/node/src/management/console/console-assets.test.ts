import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../logging/logger.ts';
import { ConsoleAssets } from './console-assets.ts';

describe('ConsoleAssets', () => {
  it('builds once for concurrent callers and serves the same assets with ETags after', async () => {
    let builds = 0;
    const assets = new ConsoleAssets(silentLogger(), async () => {
      builds++;
      return { script: 'console.log(1)', styles: 'body{}', inputs: 2 };
    });
    const [a, b] = await Promise.all([assets.get(), assets.get()]);
    expect(a).toBe(b);
    expect((await assets.get()).script.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(builds).toBe(1);
  });

  it('tries again after a failed build instead of keeping the failure', async () => {
    let builds = 0;
    const assets = new ConsoleAssets(silentLogger(), async () => {
      builds++;
      if (builds === 1) throw new Error('esbuild says no');
      return { script: 'ok', styles: '', inputs: 1 };
    });
    await expect(assets.get()).rejects.toThrow('esbuild says no');
    expect((await assets.get()).script.body).toBe('ok');
  });

  it('builds the real console bundle: one script with Preact inside and one stylesheet', async () => {
    const built = await new ConsoleAssets(silentLogger()).get();
    expect(built.script.contentType).toBe('text/javascript; charset=utf-8');
    expect(built.script.body.length).toBeGreaterThan(20_000);
    expect(built.styles.body).toContain('.badge');
  });
});
