import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys';
import type { Ed25519PrivateKey, PeerId } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { NodeIdentityError } from './errors.ts';

/** The file in the data dir holding the node's private key (libp2p protobuf encoding). */
export const NODE_KEY_FILE = 'node-key';

/** Owner read/write only: the key is the node's cluster identity, like an SSH host key. */
const KEY_FILE_MODE = 0o600;

/** Who this node is in the cluster. */
export interface NodeIdentity {
  readonly privateKey: Ed25519PrivateKey;
  readonly peerId: PeerId;
  /** The node's id everywhere in Styx (Raft replica ids, membership): its libp2p peer id string. */
  readonly nodeId: string;
}

/**
 * Load the node's Ed25519 key from `dataDir`, or make one at first start. The node id is derived
 * from the key, so it is stable for the life of the data dir and cannot be claimed by another node
 * (noise proves possession of the key on every connection). The key is written to a temporary file
 * and renamed, so a crash mid-write never leaves a truncated key that would change the node's id.
 */
export async function loadNodeIdentity(dataDir: string): Promise<NodeIdentity> {
  const path = join(dataDir, NODE_KEY_FILE);
  let bytes: Uint8Array | undefined;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new NodeIdentityError(path, 'cannot read the key file', { cause: error });
    }
  }
  if (bytes === undefined) {
    const privateKey = await generateKeyPair('Ed25519');
    const temporary = `${path}.tmp-${process.pid}`;
    await writeFile(temporary, privateKeyToProtobuf(privateKey), { mode: KEY_FILE_MODE, flag: 'w' });
    await rename(temporary, path);
    return identityOf(privateKey);
  }
  // A key restored from a backup may have lost its mode: never leave it readable by others.
  if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, KEY_FILE_MODE);
  let privateKey: ReturnType<typeof privateKeyFromProtobuf>;
  try {
    privateKey = privateKeyFromProtobuf(bytes);
  } catch (error) {
    throw new NodeIdentityError(path, 'not a libp2p private key', { cause: error });
  }
  if (privateKey.type !== 'Ed25519') {
    throw new NodeIdentityError(path, `a ${privateKey.type} key, expected Ed25519`);
  }
  return identityOf(privateKey);
}

function identityOf(privateKey: Ed25519PrivateKey): NodeIdentity {
  const peerId = peerIdFromPrivateKey(privateKey);
  return { privateKey, peerId, nodeId: peerId.toString() };
}
