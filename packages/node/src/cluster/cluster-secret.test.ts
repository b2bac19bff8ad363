import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLUSTER_SECRET_ENV, loadClusterSecret, swarmKeyFromSecret } from './cluster-secret.ts';
import { ClusterSecretInvalidError, ClusterSecretMissingError } from './errors.ts';
import { LocalCluster } from './test-support/local-cluster.ts';

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const SECRET = 'correct horse battery staple';

describe('cluster secret', () => {
  const cluster = new LocalCluster();
  afterEach(() => cluster.stop());

  it('turns the environment variable into a swarm key', async () => {
    const key = await loadClusterSecret({ env: { [CLUSTER_SECRET_ENV]: SECRET } });
    expect(text(key)).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}$/);
    expect(key).toEqual(swarmKeyFromSecret(`  ${SECRET}\n`));
    expect(key).not.toEqual(swarmKeyFromSecret(`${SECRET}!`));
  });

  it('reads a file first: a plain secret, or a ready-made swarm key used as is', async () => {
    const dir = await cluster.dataDir();
    const file = join(dir, 'cluster-secret');
    await writeFile(file, `${SECRET}\n`, { mode: 0o600 });
    const env = { [CLUSTER_SECRET_ENV]: 'another secret, ignored here' };
    expect(await loadClusterSecret({ file, env })).toEqual(swarmKeyFromSecret(SECRET));

    const swarm = `/key/swarm/psk/1.0.0/\n/base16/\n${'ab'.repeat(32)}\n`;
    await writeFile(file, swarm);
    expect(text(await loadClusterSecret({ file }))).toBe(swarm.trim());
  });

  it('fails with typed errors when the secret is missing, short, unreadable or a bad swarm key', async () => {
    await expect(loadClusterSecret({ env: {} })).rejects.toBeInstanceOf(ClusterSecretMissingError);
    await expect(loadClusterSecret({ env: { [CLUSTER_SECRET_ENV]: '' } })).rejects.toBeInstanceOf(
      ClusterSecretMissingError,
    );
    await expect(loadClusterSecret({ env: { [CLUSTER_SECRET_ENV]: 'short' } })).rejects.toBeInstanceOf(
      ClusterSecretInvalidError,
    );
    const dir = await cluster.dataDir();
    await expect(loadClusterSecret({ file: join(dir, 'absent') })).rejects.toBeInstanceOf(
      ClusterSecretInvalidError,
    );
    expect(() => swarmKeyFromSecret('/key/swarm/psk/1.0.0/\n/base16/\nabc')).toThrow(
      ClusterSecretInvalidError,
    );
  });
});
