/**
 * How a node with an empty data dir and discovered peers (DNS discovery) decides between joining a
 * cluster and forming one. Every node of a deployment has the same configuration, so no node is
 * told "you form it": the rule below makes exactly one of them do it, and never a second cluster
 * beside a running one.
 *
 * The node asks each listed node (a probe, the join RPC with `probe: true`) whether it is a cluster
 * member already:
 * - some answer yes: join through them (a replaced node with a fresh disk, a node added later);
 * - some did not answer (not started yet, unreachable): wait and ask again, since one of them may
 *   be a member: forming now could make a second cluster;
 * - every other listed node answered no: the node whose address sorts first among the listed
 *   ones (itself included) forms the cluster; the others wait for it and then join it. A node that
 *   is not listed itself never forms one.
 *
 * Worked example: DNS lists 10.0.0.1:25680, 10.0.0.2:25680, 10.0.0.3:25680, all fresh. .2 and .3
 * find nobody clustered and wait; .1 waits until .2 and .3 answer "no", then forms; .2 and .3 ask
 * again, find .1 clustered and join through it.
 */
import { networkInterfaces } from 'node:os';

/** A listed node's answer to the probe. */
export type SeedAnswer = 'clustered' | 'not-clustered' | 'no-answer';

/** What the node does next. */
export type SeedDecision =
  | { readonly action: 'join'; readonly through: readonly string[] }
  | { readonly action: 'form' }
  | { readonly action: 'wait'; readonly reason: string };

/**
 * The decision, from the listed addresses (`self`: the one that is this node, if listed) and the
 * answers of the others (every listed address but `self` has one).
 */
export function decideSeeds(
  listed: readonly string[],
  self: string | undefined,
  answers: ReadonlyMap<string, SeedAnswer>,
): SeedDecision {
  const others = listed.filter((address) => address !== self);
  const clustered = others.filter((address) => answers.get(address) === 'clustered');
  if (clustered.length > 0) return { action: 'join', through: clustered };
  const silent = others.filter((address) => answers.get(address) !== 'not-clustered');
  if (silent.length > 0) {
    return { action: 'wait', reason: `no answer yet from ${silent.join(', ')} (one may be a member)` };
  }
  if (self === undefined) {
    return {
      action: 'wait',
      reason:
        others.length === 0
          ? 'DNS lists no node'
          : 'DNS does not list this node, so it never forms a cluster; none of the listed nodes is in one yet',
    };
  }
  const first = [...listed].sort()[0];
  if (first === self) return { action: 'form' };
  return { action: 'wait', reason: `${first} forms the cluster (its address sorts first); waiting for it` };
}

/** The IP addresses of this machine's interfaces (loopback included). */
export function localInterfaceAddresses(): ReadonlySet<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) addresses.add(entry.address);
  }
  return addresses;
}

/**
 * Whether a listed `HOST:PORT` is this node: its port is the node's cluster port and its host is
 * one of this machine's addresses (or the address the node listens on).
 */
export function isOwnAddress(address: string, ownPort: number, ownHosts: ReadonlySet<string>): boolean {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d+)$/.exec(address);
  const host = match?.[1] ?? match?.[2];
  return host !== undefined && Number(match?.[3]) === ownPort && ownHosts.has(host);
}
