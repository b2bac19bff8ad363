/**
 * The names the management listener answers to: a request whose `Host` header names anything else
 * is refused (421) before authentication.
 *
 * Why: DNS rebinding. A page on `http://evil.example:15680` whose name the attacker then points at
 * 127.0.0.1 is, to the browser, same-origin with itself — its scripts can read the replies of the
 * loopback listener, where `guest`/`guest` logs in. The browser still sends `Host: evil.example:15680`;
 * refusing names the listener does not own closes that door. The names it owns:
 *
 * - the address it is bound to (`127.0.0.1`, `[::1]`, `10.0.0.5`);
 * - bound to a loopback address: `localhost`, `127.0.0.1` and `[::1]` (any of them reaches it);
 * - bound to every address (`0.0.0.0`, `::`): those three, the machine's host name, and the address
 *   of each of its network interfaces;
 * - whatever the operator adds with `--management-hostname` (a name behind a proxy or in DNS).
 *
 * Names compare case-insensitively, without a trailing dot; the port is not compared (a proxy or a
 * port forward may change it, and the name is what a rebinding attack cannot choose). A request
 * without a Host header (HTTP/1.0; HTTP/1.1 requires one and node:http refuses its absence) is not
 * a browser's and is let through.
 */
import { hostname, networkInterfaces } from 'node:os';
import { isLoopbackAddress } from '../broker/loopback.ts';

/** What the machine calls itself; `os` unless a test gives its own. */
export interface MachineNames {
  readonly hostname: string;
  /** The addresses of its network interfaces (IPv4 and IPv6, without zone ids). */
  readonly addresses: readonly string[];
}

/** The machine's names from node:os. */
export function machineNames(): MachineNames {
  const addresses: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) addresses.push(entry.address);
  }
  return { hostname: hostname(), addresses };
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];
const WILDCARD_ADDRESSES = new Set(['0.0.0.0', '::', '::0', '0:0:0:0:0:0:0:0']);

/** The names accepted in the Host header of a request to a listener bound to `boundAddress`. */
export class HostAllowList {
  private readonly names: ReadonlySet<string>;

  constructor(boundAddress: string, extraNames: readonly string[], machine: MachineNames = machineNames()) {
    const names = new Set<string>([normalise(boundAddress)]);
    const add = (list: readonly string[]): void => {
      for (const name of list) names.add(normalise(name));
    };
    if (isLoopbackAddress(boundAddress) || boundAddress === 'localhost') add(LOOPBACK_NAMES);
    if (WILDCARD_ADDRESSES.has(boundAddress)) {
      add(LOOPBACK_NAMES);
      add([machine.hostname, ...machine.addresses.map((a) => a.replace(/%.*$/, ''))]);
    }
    add(extraNames);
    this.names = names;
  }

  /** Whether a request with this `Host` header may be served. */
  allows(hostHeader: string | undefined): boolean {
    if (hostHeader === undefined) return true;
    const name = hostName(hostHeader);
    return name !== undefined && this.names.has(name);
  }
}

/** The name part of a Host header (`[::1]:15680` → `::1`, `Styx.Example.:80` → `styx.example`). */
export function hostName(hostHeader: string): string | undefined {
  const header = hostHeader.trim();
  if (header.startsWith('[')) {
    const close = header.indexOf(']');
    if (close < 0) return undefined;
    const rest = header.slice(close + 1);
    if (rest !== '' && !/^:\d*$/.test(rest)) return undefined;
    return normalise(header.slice(1, close));
  }
  const colon = header.indexOf(':');
  if (colon >= 0 && !/^\d*$/.test(header.slice(colon + 1))) return undefined;
  const name = colon < 0 ? header : header.slice(0, colon);
  return name === '' ? undefined : normalise(name);
}

function normalise(name: string): string {
  const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
  return bare.toLowerCase().replace(/\.$/, '');
}
