// The cluster's network: every node in a network namespace of its own, joined by veth pairs to one
// bridge in the root namespace, so the harness (and its SDK clients, in the root namespace) reaches
// each node at its own address and a fault cuts real TCP connections between the nodes.
//
//   root ns: bridge stxc-br 10.77.0.254/24 ─┬─ stxc-v1 ⇄ [ns stxc-n1] eth0 10.77.0.1
//                                           ├─ stxc-v2 ⇄ [ns stxc-n2] eth0 10.77.0.2 ...
//
// Faults are iptables rules and tc qdiscs *inside* the node namespaces, matched on node addresses
// only: the client traffic from 10.77.0.254 is never cut, so what a run measures is the cluster's
// behaviour, not the clients'. The namespaces have no route anywhere but the bridge's /24.
//
// This kernel has no netem (CONFIG_NET_SCH_NETEM is off, and so are prio/sfq/fq), so a "slow link"
// is an HTB rate limit (queueing delay under load) plus iptables' random packet loss (TCP
// retransmission delays) on the node's egress to its peers, not a fixed added delay.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PreflightError } from './errors.ts';
import { run, runSync } from './shell.ts';

const PREFIX = 'stxc';
const BRIDGE = `${PREFIX}-br`;
export const SUBNET = '10.77.0';
export const HOST_IP = `${SUBNET}.254`;
/** Holds the pid of the run owning the network, so a second run refuses and a dead one's is cleaned. */
const LOCK_FILE = '/run/styx-chaos.lock';

export interface Host {
  /** 1-based, as in the node names n1..nN. */
  readonly index: number;
  readonly namespace: string;
  readonly ip: string;
  /** The veth end on the bridge, in the root namespace. */
  readonly hostVeth: string;
}

export interface SlowLink {
  /** Egress rate to each peer, kbit/s. */
  readonly rateKbit: number;
  /** Share of packets to peers dropped, 0..100. */
  readonly lossPercent: number;
}

const hostOf = (index: number): Host => ({
  index,
  namespace: `${PREFIX}-n${index}`,
  ip: `${SUBNET}.${index}`,
  hostVeth: `${PREFIX}-v${index}`,
});

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export class ChaosNetwork {
  readonly hosts: readonly Host[];
  #destroyed = false;

  private constructor(hosts: Host[]) {
    this.hosts = hosts;
  }

  /**
   * Builds the bridge and `size` namespaces. Refuses while another live run owns the network; removes
   * what a dead run (SIGKILLed harness) left behind first.
   */
  static async create(size: number): Promise<ChaosNetwork> {
    if (existsSync(LOCK_FILE)) {
      const owner = Number(readFileSync(LOCK_FILE, 'utf8').trim());
      if (Number.isInteger(owner) && owner !== process.pid && pidAlive(owner))
        throw new PreflightError(
          `another chaos run (pid ${owner}) owns the test network; wait for it to end`,
        );
    }
    removeLeftovers();
    writeFileSync(LOCK_FILE, `${process.pid}\n`);
    const network = new ChaosNetwork(Array.from({ length: size }, (_, i) => hostOf(i + 1)));
    try {
      await run('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
      await run('ip', ['addr', 'add', `${HOST_IP}/24`, 'dev', BRIDGE]);
      await run('ip', ['link', 'set', BRIDGE, 'up']);
      for (const host of network.hosts) {
        await run('ip', ['netns', 'add', host.namespace]);
        await run('ip', [
          'link',
          'add',
          host.hostVeth,
          'type',
          'veth',
          'peer',
          'name',
          'eth0',
          'netns',
          host.namespace,
        ]);
        await run('ip', ['link', 'set', host.hostVeth, 'master', BRIDGE, 'up']);
        await run('ip', ['-n', host.namespace, 'addr', 'add', `${host.ip}/24`, 'dev', 'eth0']);
        await run('ip', ['-n', host.namespace, 'link', 'set', 'eth0', 'up']);
        await run('ip', ['-n', host.namespace, 'link', 'set', 'lo', 'up']);
      }
    } catch (error) {
      network.destroySync();
      throw error;
    }
    return network;
  }

  host(index: number): Host {
    const host = this.hosts[index - 1];
    if (host === undefined) throw new RangeError(`no host ${index}`);
    return host;
  }

  /** Drops every packet from node `from` to node `to` (one direction), at `to`'s input. */
  async cut(from: number, to: number): Promise<void> {
    await this.#iptables(to, ['-A', 'INPUT', '-s', this.host(from).ip, '-j', 'DROP']);
  }

  /** Cuts every link between nodes of different groups, both ways. */
  async partition(groups: readonly (readonly number[])[]): Promise<void> {
    for (const group of groups)
      for (const other of groups) {
        if (other === group) continue;
        for (const from of group) for (const to of other) await this.cut(from, to);
      }
  }

  /** Slows the links from `node` to every other node (see the file comment for what "slow" is). */
  async slow(node: number, link: SlowLink): Promise<void> {
    const { namespace } = this.host(node);
    const tc = (args: string[]) => run('ip', ['netns', 'exec', namespace, 'tc', ...args]);
    // Class 1:1 (unlimited) takes client traffic; 1:10 takes traffic to the peers.
    await tc(['qdisc', 'add', 'dev', 'eth0', 'root', 'handle', '1:', 'htb', 'default', '1', 'r2q', '1000']);
    await tc(['class', 'add', 'dev', 'eth0', 'parent', '1:', 'classid', '1:1', 'htb', 'rate', '10gbit']);
    const rate = `${link.rateKbit}kbit`;
    await tc([
      'class',
      'add',
      'dev',
      'eth0',
      'parent',
      '1:',
      'classid',
      '1:10',
      'htb',
      'rate',
      rate,
      'ceil',
      rate,
    ]);
    // A short FIFO: packets past it are dropped rather than queued for minutes.
    await tc(['qdisc', 'add', 'dev', 'eth0', 'parent', '1:10', 'handle', '10:', 'pfifo', 'limit', '200']);
    for (const peer of this.hosts) {
      if (peer.index === node) continue;
      await tc(
        ['filter', 'add', 'dev', 'eth0', 'parent', '1:', 'protocol', 'ip', 'prio', '1', 'u32'].concat([
          'match',
          'ip',
          'dst',
          `${peer.ip}/32`,
          'flowid',
          '1:10',
        ]),
      );
      if (link.lossPercent > 0)
        await this.#iptables(
          node,
          ['-A', 'OUTPUT', '-d', peer.ip, '-m', 'statistic', '--mode', 'random'].concat([
            '--probability',
            String(link.lossPercent / 100),
            '-j',
            'DROP',
          ]),
        );
    }
  }

  /** Removes every fault: all rules, all qdiscs. */
  async heal(): Promise<void> {
    for (const host of this.hosts) {
      await this.#iptables(host.index, ['-F', 'INPUT']);
      await this.#iptables(host.index, ['-F', 'OUTPUT']);
      // No root qdisc to delete is the usual case: not an error.
      await run('ip', ['netns', 'exec', host.namespace, 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root']).catch(
        () => undefined,
      );
    }
  }

  /** The rules in force, per node, for a failure report. */
  async describe(): Promise<string> {
    const lines: string[] = [];
    for (const host of this.hosts) {
      const rules = await run('ip', ['netns', 'exec', host.namespace, 'iptables', '-S']).catch(String);
      const cut = rules.split('\n').filter((l) => l.startsWith('-A'));
      lines.push(`n${host.index}: ${cut.length === 0 ? '(no rules)' : cut.join('; ')}`);
    }
    return lines.join('\n');
  }

  /** Removes the veths, namespaces and bridge; safe to call twice and from an 'exit' handler. */
  destroySync(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    removeLeftovers();
    rmSync(LOCK_FILE, { force: true });
  }

  #iptables(node: number, args: string[]): Promise<string> {
    // -w: iptables takes a lock shared by every namespace; wait for it instead of failing.
    return run('ip', ['netns', 'exec', this.host(node).namespace, 'iptables', '-w', '5', ...args]);
  }
}

/**
 * Deletes every namespace (and any process left in one), veth and bridge with the harness's
 * prefix. A veth is deleted before its
 * namespace: deleting only the namespace leaves the root end to the kernel's asynchronous cleanup,
 * which a quick next run could collide with.
 */
function removeLeftovers(): void {
  const links = runSync('ip', ['-o', 'link', 'show']).stdout;
  for (const match of links.matchAll(new RegExp(`^\\d+: (${PREFIX}-v\\d+)[@:]`, 'gm')))
    runSync('ip', ['link', 'del', match[1] as string]);
  for (const line of runSync('ip', ['netns', 'list']).stdout.split('\n')) {
    const name = line.split(' ')[0];
    if (!name?.startsWith(`${PREFIX}-n`)) continue;
    // Nodes of a harness that was SIGKILLed outlive it: only they run in these namespaces.
    for (const pid of runSync('ip', ['netns', 'pids', name]).stdout.split('\n').map(Number)) {
      if (!Number.isInteger(pid) || pid <= 0) continue;
      try {
        process.kill(pid, 'SIGCONT');
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    runSync('ip', ['netns', 'del', name]);
  }
  if (runSync('ip', ['link', 'show', BRIDGE]).ok) runSync('ip', ['link', 'del', BRIDGE]);
}

/** Checks the tools and privileges; installs iptables with apt-get when root and it is missing. */
export function preflight(): void {
  if (process.getuid?.() !== 0)
    throw new PreflightError('the chaos harness makes network namespaces: run it as root');
  for (const tool of ['ip', 'tc']) {
    if (!runSync(tool, ['-V']).ok)
      throw new PreflightError(`\`${tool}\` is missing: apt-get install iproute2`);
  }
  if (!runSync('iptables', ['-V']).ok) {
    process.stderr.write("iptables is missing: installing Debian's iptables package\n");
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const ok =
      runSync('apt-get', ['update', '-qq'], env, 300_000).ok &&
      runSync('apt-get', ['install', '-y', '-qq', 'iptables'], env, 300_000).ok;
    if (!ok || !runSync('iptables', ['-V']).ok)
      throw new PreflightError(
        'iptables is missing and apt-get could not install it: apt-get install iptables',
      );
  }
}
