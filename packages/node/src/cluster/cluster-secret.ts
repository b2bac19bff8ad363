import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ClusterSecretInvalidError, ClusterSecretMissingError } from './errors.ts';

/** The environment variable holding the cluster secret when no file is given. */
export const CLUSTER_SECRET_ENV = 'STYX_CLUSTER_SECRET';

/**
 * Shortest accepted secret, in characters. The secret is bound into every noise handshake (see
 * `secretBoundNoise`); anyone who connects once gets a handshake message authenticated with it,
 * so a short one could be guessed offline from that one message.
 */
export const MIN_CLUSTER_SECRET_LENGTH = 16;

/**
 * Header of a libp2p pnet swarm key (the format `@libp2p/pnet` and IPFS use). Styx no longer runs a
 * private network, but keeps the format: the key files of existing clusters stay valid.
 */
const SWARM_KEY_HEADER = '/key/swarm/psk/1.0.0/';

export interface ClusterSecretSource {
  /** A file holding the secret (takes precedence over the environment). */
  readonly file?: string | undefined;
  /** Where to look for `STYX_CLUSTER_SECRET` (default: `process.env`). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Load the pre-shared cluster secret, the analogue of RabbitMQ's Erlang cookie, and turn it into
 * a swarm key (the format `@libp2p/pnet` takes, kept for existing key files). Every node of a
 * cluster must use the same secret: it is bound into the noise handshake (`secretBoundNoise`), so
 * a node without it fails the handshake before any stream (Raft, RPC) opens.
 *
 * The secret is any text of at least `MIN_CLUSTER_SECRET_LENGTH` characters (surrounding
 * whitespace ignored); its 32-byte key is a SHA-256 over a Styx-specific prefix and the text.
 * A file may also hold a ready-made swarm key (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex
 * digits), used as is.
 *
 * Throws `ClusterSecretMissingError` when neither source is set, `ClusterSecretInvalidError` when
 * the secret is unusable.
 */
export async function loadClusterSecret(source: ClusterSecretSource = {}): Promise<Uint8Array> {
  if (source.file !== undefined) {
    let text: string;
    try {
      text = await readFile(source.file, 'utf8');
    } catch (error) {
      throw new ClusterSecretInvalidError(source.file, `cannot read: ${String(error)}`);
    }
    return swarmKeyFromSecret(text, source.file);
  }
  const value = (source.env ?? process.env)[CLUSTER_SECRET_ENV];
  if (value === undefined || value === '') throw new ClusterSecretMissingError(CLUSTER_SECRET_ENV);
  return swarmKeyFromSecret(value, CLUSTER_SECRET_ENV);
}

/** The swarm key for `secret` (see `loadClusterSecret`); `origin` names it in errors. */
export function swarmKeyFromSecret(secret: string, origin = 'the secret'): Uint8Array {
  const text = secret.trim();
  if (text.startsWith(SWARM_KEY_HEADER)) return parseSwarmKey(text, origin);
  if (text.length < MIN_CLUSTER_SECRET_LENGTH) {
    throw new ClusterSecretInvalidError(
      origin,
      `${text.length} characters, at least ${MIN_CLUSTER_SECRET_LENGTH} are required`,
    );
  }
  const key = createHash('sha256').update('styx-cluster-secret/1\n').update(text).digest('hex');
  return swarmKey(key);
}

function parseSwarmKey(text: string, origin: string): Uint8Array {
  const [, encoding, key, ...rest] = text.split(/\r?\n/);
  if (encoding !== '/base16/' || key === undefined || !/^[0-9a-fA-F]{64}$/.test(key) || rest.length > 0) {
    throw new ClusterSecretInvalidError(origin, 'a swarm key must be its header, /base16/ and 64 hex digits');
  }
  return swarmKey(key.toLowerCase());
}

function swarmKey(hex: string): Uint8Array {
  return new TextEncoder().encode(`${SWARM_KEY_HEADER}\n/base16/\n${hex}`);
}
