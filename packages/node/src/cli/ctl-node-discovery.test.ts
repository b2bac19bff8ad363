// Which node `styx ctl --config FILE` talks to when no node is running in the file's data dir.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseNode } from './ctl-node-discovery.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'styx-discovery-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function fromConfig(...lines: string[]): Promise<{ url: string; notice: string | undefined }> {
  const file = join(dir, 'styx.conf');
  await writeFile(file, `data_dir = ${join(dir, 'data')}\n${lines.join('\n')}\n`);
  return chooseNode({ node: undefined, env: {}, dataDir: undefined, config: file, cwd: dir });
}

describe('chooseNode with --config and no running node', () => {
  it("talks to the file's management.host and management.port", async () => {
    const choice = await fromConfig('management.host = 0.0.0.0', 'management.port = 15690');
    expect(choice.url).toBe('http://127.0.0.1:15690');
    expect(choice.notice).toContain('its management.host and management.port');
  });

  it('talks https to management.tls.port when the file turns the plain listener off', async () => {
    const choice = await fromConfig(
      'management.port = 0',
      'management.tls.port = 15681',
      'tls.cert_file = /etc/styx/cert.pem',
      'tls.key_file = /etc/styx/key.pem',
    );
    expect(choice.url).toBe('https://127.0.0.1:15681');
    expect(choice.notice).toContain('its management.host and management.tls.port');
  });
});
