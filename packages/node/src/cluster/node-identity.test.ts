import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeIdentityError } from './errors.ts';
import { loadNodeIdentity, NODE_KEY_FILE } from './node-identity.ts';
import { LocalCluster } from './test-support/local-cluster.ts';

describe('node identity', () => {
  const cluster = new LocalCluster();
  afterEach(() => cluster.stop());

  it('is made at first start with owner-only permissions and kept across restarts', async () => {
    const dir = await cluster.dataDir();
    const first = await loadNodeIdentity(dir);
    expect(first.privateKey.type).toBe('Ed25519');
    expect(first.nodeId).toBe(first.peerId.toString());
    expect((await stat(join(dir, NODE_KEY_FILE))).mode & 0o777).toBe(0o600);

    // A libp2p host started from it has that peer id, and so does the next start.
    const node = await cluster.start(first);
    expect(node.node.peerId.toString()).toBe(first.nodeId);
    await cluster.stopNode(node);
    const again = await loadNodeIdentity(dir);
    expect(again.nodeId).toBe(first.nodeId);
    const restarted = await cluster.start(again);
    expect(restarted.node.peerId.toString()).toBe(first.nodeId);

    expect((await loadNodeIdentity(await cluster.dataDir())).nodeId).not.toBe(first.nodeId);
  });

  it('tightens the permissions of a key file readable by others', async () => {
    const dir = await cluster.dataDir();
    await loadNodeIdentity(dir);
    const { chmod } = await import('node:fs/promises');
    await chmod(join(dir, NODE_KEY_FILE), 0o644);
    await loadNodeIdentity(dir);
    expect((await stat(join(dir, NODE_KEY_FILE))).mode & 0o777).toBe(0o600);
  });

  it('refuses a corrupt key file with NodeIdentityError instead of making a new id', async () => {
    const dir = await cluster.dataDir();
    await writeFile(join(dir, NODE_KEY_FILE), 'not a key', { mode: 0o600 });
    await expect(loadNodeIdentity(dir)).rejects.toBeInstanceOf(NodeIdentityError);
  });
});
