import { yamux } from '@chainsafe/libp2p-yamux';
import type { GossipSub } from '@libp2p/gossipsub';
import { gossipsub } from '@libp2p/gossipsub';
import type { Identify } from '@libp2p/identify';
import { identify } from '@libp2p/identify';
import type { Libp2p, PrivateKey } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { createLibp2p } from 'libp2p';
import type { Logger } from '../logging/logger.ts';
import type { ClusterGater } from './connection-gater.ts';
import { libp2pLogBridge } from './libp2p-log-bridge.ts';
import { peerMultiaddr } from './peer-address.ts';
import { secretBoundNoise } from './secret-bound-noise.ts';

/** The libp2p services a cluster node runs (a type alias: libp2p's `ServiceMap` is an index type). */
export type ClusterServices = {
  readonly identify: Identify;
  readonly pubsub: GossipSub;
};

/** A started cluster host. */
export type ClusterLibp2p = Libp2p<ClusterServices>;

export interface ClusterNodeOptions {
  /** The node's identity key (see `loadNodeIdentity`). */
  readonly privateKey: PrivateKey;
  /** Where to listen for peers, `host:port` (port 0: any free port, for tests). */
  readonly listen: string;
  /** The cluster secret's key (see `loadClusterSecret`), bound into every noise handshake. */
  readonly swarmKey: Uint8Array;
  /** Who may connect (members and approved joins). */
  readonly gater: ClusterGater;
  /** Gets libp2p's error logs, refused handshakes among them (see `libp2pLogBridge`). */
  readonly logger: Logger;
  /**
   * Inbound connections accepted per second from one IP address (default
   * `DEFAULT_INBOUND_CONNECTIONS_PER_SECOND`). libp2p's own default (5) is meant for public
   * networks; cluster peers are gated by the secret and the membership, and several nodes may share
   * a host when tests or a small install run them on one machine.
   */
  readonly inboundConnectionsPerSecond?: number;
}

/** See `ClusterNodeOptions.inboundConnectionsPerSecond`. */
export const DEFAULT_INBOUND_CONNECTIONS_PER_SECOND = 100;

/**
 * Create and start a node's libp2p host: TCP, noise bound to the cluster secret (a peer without
 * it fails the handshake, see `secretBoundNoise`), yamux, the membership gater, identify
 * (gossipsub learns its peers' protocols from it) and gossipsub for cluster events. There is no
 * peer discovery: peers are dialled at the addresses the membership gives.
 *
 * There is no private network (`@libp2p/pnet`) any more: it ciphered every byte a second time
 * around noise (xsalsa20 in WASM, 8–10 % of a busy leader's CPU) for no guarantee noise with the
 * secret in its prologue does not give. A node of a build that still runs pnet cannot talk to
 * this one (docs/operations.md, "Upgrading from a build with the private network").
 */
export async function createClusterNode(options: ClusterNodeOptions): Promise<ClusterLibp2p> {
  return createLibp2p<ClusterServices>({
    privateKey: options.privateKey,
    logger: libp2pLogBridge(options.logger),
    addresses: { listen: [peerMultiaddr(options.listen).toString()] },
    transports: [tcp()],
    connectionEncrypters: [secretBoundNoise(options.swarmKey)],
    streamMuxers: [yamux()],
    connectionGater: options.gater.libp2pGater(),
    connectionManager: {
      inboundConnectionThreshold:
        options.inboundConnectionsPerSecond ?? DEFAULT_INBOUND_CONNECTIONS_PER_SECOND,
    },
    services: {
      identify: identify(),
      // Cluster events are hints published by a handful of nodes: no peer scoring games, and a
      // publish with no subscribed peer yet (a node starting alone) is not an error.
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, emitSelf: false }),
    },
  });
}

/** The `host:port` a started node listens on for TCP (its first TCP listen address). */
export function listenAddress(node: Libp2p): string {
  for (const address of node.getMultiaddrs()) {
    const components = address.getComponents();
    const host = components.find((c) => c.name === 'ip4' || c.name === 'ip6' || c.name === 'dns');
    const port = components.find((c) => c.name === 'tcp')?.value;
    if (host?.value === undefined || port === undefined) continue;
    return host.name === 'ip6' ? `[${host.value}]:${port}` : `${host.value}:${port}`;
  }
  throw new RangeError('the node listens on no TCP address');
}
