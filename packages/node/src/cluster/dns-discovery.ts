/**
 * Peer discovery by DNS: one name whose records list the cluster's nodes, so every node of a
 * deployment gets the same configuration and a node added later needs no change on the others.
 *
 * - With a port (`--discover-dns-port`): the name's A and AAAA records, each a node listening on
 *   that port (`styx.example.com` → 10.0.0.1, 10.0.0.2, 10.0.0.3).
 * - Without one: the name's SRV records, each giving a host and its port
 *   (`_styx-cluster._tcp.example.com` → `0 0 25680 styx-1.example.com.`); the hosts are resolved
 *   with the same servers (A and AAAA), an IP literal is taken as is.
 *
 * The resolver asks the system's servers (/etc/resolv.conf) unless `servers` names others (tests
 * point it at a dnsmasq on loopback). What a node does with the addresses is seed-formation.ts's.
 */
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ClusterError } from './errors.ts';

/** How long one DNS query may wait for an answer, ms, and how often it is sent. */
const QUERY_TIMEOUT_MS = 2_000;
const QUERY_TRIES = 2;

/** Where the cluster's nodes are listed in DNS. */
export interface DnsDiscoveryOptions {
  /** The name to look up. */
  readonly name: string;
  /** The nodes' cluster port: the name's A/AAAA records are read; undefined: its SRV records. */
  readonly port: number | undefined;
  /** DNS servers, `IP` or `IP:PORT` (`[IPv6]:PORT`); empty: the system's. */
  readonly servers: readonly string[];
}

/** The name did not resolve (no such name, no records of the kind asked, no server answered). */
export class DnsDiscoveryError extends ClusterError {
  constructor(message: string, options?: ErrorOptions) {
    super('DNS_DISCOVERY_FAILED', message, options);
  }
}

/** What a lookup found: every node's `HOST:PORT` (sorted, no repeats) and the hosts that failed. */
export interface DnsDiscoveryResult {
  readonly addresses: readonly string[];
  /** SRV targets that did not resolve, with why (the others are still used). */
  readonly problems: readonly string[];
}

/** `host:port`, with brackets around an IPv6 host. */
export function hostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Looks the cluster's nodes up in DNS, each time `lookup` is called. */
export class DnsDiscovery {
  readonly options: DnsDiscoveryOptions;
  readonly #resolver: Resolver;

  constructor(options: DnsDiscoveryOptions) {
    this.options = options;
    this.#resolver = new Resolver({ timeout: QUERY_TIMEOUT_MS, tries: QUERY_TRIES });
    if (options.servers.length > 0) this.#resolver.setServers([...options.servers]);
  }

  /** For logs: `A/AAAA styx.example.com (port 25680)` or `SRV _styx._tcp.example.com`. */
  get description(): string {
    const { name, port } = this.options;
    return port === undefined ? `SRV ${name}` : `A/AAAA ${name} (port ${port})`;
  }

  /** The nodes the name lists now. Rejects with DnsDiscoveryError when it lists none. */
  async lookup(): Promise<DnsDiscoveryResult> {
    const { name, port } = this.options;
    const problems: string[] = [];
    const found: string[] = [];
    if (port !== undefined) {
      for (const host of await this.#hostAddresses(name)) found.push(hostPort(host, port));
    } else {
      let records: { name: string; port: number }[];
      try {
        records = await this.#resolver.resolveSrv(name);
      } catch (error) {
        throw new DnsDiscoveryError(`no SRV records for ${name}: ${describe(error)}`, { cause: error });
      }
      for (const record of records) {
        const target = record.name.replace(/\.$/, '');
        try {
          for (const host of await this.#hostAddresses(target)) found.push(hostPort(host, record.port));
        } catch (error) {
          problems.push(`${target}: ${(error as Error).message}`);
        }
      }
      if (found.length === 0) {
        throw new DnsDiscoveryError(
          `the SRV records of ${name} name no host that resolves${problems.length > 0 ? ` (${problems.join('; ')})` : ''}`,
        );
      }
    }
    return { addresses: [...new Set(found)].sort(), problems };
  }

  /** A host's IPv4 and IPv6 addresses (an IP literal: itself). Rejects when it has neither. */
  async #hostAddresses(host: string): Promise<string[]> {
    if (isIP(host) !== 0) return [host];
    const [v4, v6] = await Promise.allSettled([this.#resolver.resolve4(host), this.#resolver.resolve6(host)]);
    const addresses = [
      ...(v4.status === 'fulfilled' ? v4.value : []),
      ...(v6.status === 'fulfilled' ? v6.value : []),
    ];
    if (addresses.length > 0) return addresses;
    const error = v4.status === 'rejected' ? v4.reason : v6.status === 'rejected' ? v6.reason : undefined;
    throw new DnsDiscoveryError(`no A or AAAA records for ${host}: ${describe(error)}`, { cause: error });
  }
}

/** A resolver error as a short text: `ENOTFOUND`, `ECONNREFUSED` ... with node's message. */
function describe(error: unknown): string {
  if (error === undefined) return 'no records';
  const code = (error as NodeJS.ErrnoException).code;
  const message = error instanceof Error ? error.message : String(error);
  return code !== undefined && !message.includes(code) ? `${code} ${message}` : message;
}
