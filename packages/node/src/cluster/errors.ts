/** Errors of the cluster layer (identity, secret, peer transport). Each failure mode has its own class. */

/** Base class: every cluster error carries a stable `code`. */
export class ClusterError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** No cluster secret was configured: a clustered node refuses to start without one. */
export class ClusterSecretMissingError extends ClusterError {
  constructor(envVar: string) {
    super(
      'CLUSTER_SECRET_MISSING',
      `no cluster secret: set ${envVar} or give a secret file (the same secret on every node)`,
    );
  }
}

/** The configured cluster secret is unusable (empty, too short, or a malformed swarm key). */
export class ClusterSecretInvalidError extends ClusterError {
  constructor(source: string, detail: string) {
    super('CLUSTER_SECRET_INVALID', `cluster secret from ${source} is invalid: ${detail}`);
  }
}

/** The node's identity key in the data dir cannot be read or is not an Ed25519 key. */
export class NodeIdentityError extends ClusterError {
  constructor(path: string, detail: string, options?: ErrorOptions) {
    super('NODE_IDENTITY_INVALID', `node identity ${path}: ${detail}`, options);
  }
}

/** A peer address is neither `host:port` nor a multiaddr. */
export class PeerAddressError extends ClusterError {
  constructor(address: string, detail: string) {
    super('PEER_ADDRESS_INVALID', `peer address ${JSON.stringify(address)}: ${detail}`);
  }
}

/** A Raft frame exceeds the transport's bound (`maxFrameBytes`), outgoing or incoming. */
export class FrameTooLargeError extends ClusterError {
  readonly bytes: number;
  readonly limit: number;
  constructor(bytes: number, limit: number) {
    super('RAFT_FRAME_TOO_LARGE', `raft frame of ${bytes} bytes exceeds the bound of ${limit} bytes`);
    this.bytes = bytes;
    this.limit = limit;
  }
}
