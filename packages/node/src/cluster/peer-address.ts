import { isIP } from 'node:net';
import type { PeerId } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import type { Multiaddr } from '@multiformats/multiaddr';
import { multiaddr } from '@multiformats/multiaddr';
import { PeerAddressError } from './errors.ts';

/**
 * A TCP multiaddr for an operator's `host:port` (`10.0.0.5:4370`, `[fd00::5]:4370`,
 * `node-b.internal:4370`), or the multiaddr itself when the address starts with `/`. With `peer`,
 * the result ends in `/p2p/<peer>`, so a dial proves that the listener holds that peer's key.
 */
export function peerMultiaddr(address: string, peer?: PeerId): Multiaddr {
  let base: Multiaddr;
  if (address.startsWith('/')) {
    try {
      base = multiaddr(address);
    } catch (error) {
      throw new PeerAddressError(address, String(error));
    }
  } else {
    const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(address);
    const host = match?.[1] ?? match?.[2];
    const port = Number(match?.[3]);
    if (host === undefined || !(port >= 0 && port <= 65_535)) {
      throw new PeerAddressError(address, 'expected host:port or [ipv6]:port');
    }
    const family = isIP(host);
    const protocol = family === 4 ? 'ip4' : family === 6 ? 'ip6' : 'dns';
    base = multiaddr(`/${protocol}/${host}/tcp/${port}`);
  }
  if (peer === undefined) return base;
  return base.encapsulate(`/p2p/${peer.toString()}`);
}

/**
 * The multiaddr at which node `nodeId` (a peer id string) listens, ending in its `/p2p/` id: what
 * an address book keeps for a member. Throws `PeerAddressError` when `address` is neither
 * `host:port` nor a multiaddr, or when `nodeId` is not a peer id.
 */
export function nodeMultiaddr(nodeId: string, address: string): Multiaddr {
  let peer: PeerId;
  try {
    peer = peerIdFromString(nodeId);
  } catch {
    throw new PeerAddressError(address, `node id ${nodeId} is not a libp2p peer id`);
  }
  return peerMultiaddr(address, peer);
}
