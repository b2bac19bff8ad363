/**
 * Peer discovery by DNS on real `styx server` processes: a dnsmasq on loopback serves SRV records
 * naming the nodes (all on 127.0.0.1, each its own cluster port), and each node's only join
 * information is the DNS name (`--discover-dns`, pointed at that dnsmasq with
 * `--discover-dns-server`). Three fresh nodes form one cluster; a fourth whose name does not resolve
 * stays up, logs and retries, and joins once DNS lists it. Bounded in time; dnsmasq and every node
 * are stopped at the end.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, startBroker } from '../support/broker-process.ts';
import { managementApi } from '../support/cluster-processes.ts';
import { Dnsmasq } from '../support/dnsmasq.ts';
import { eventually } from '../support/eventually.ts';

const SERVICE = '_styx-cluster._tcp.styx.test';
const LATE = '_styx-cluster._tcp.late.test';

interface NodeJson {
  readonly name: string;
  readonly running: boolean;
}

describe('peer discovery by DNS (dnsmasq on loopback)', () => {
  let root: string;
  let dns: Dnsmasq;
  let secretFile: string;
  const children: ChildProcess[] = [];
  const nodes: BrokerProcess[] = [];
  const clusterPorts = new Map<string, number>();

  /** dnsmasq lines listing `names` under the SRV name `service` (each node a host record). */
  const records = (service: string, names: readonly string[]): string[] =>
    names.flatMap((name) => [
      `srv-host=${service},${name}.styx.test,${clusterPorts.get(name)}`,
      `host-record=${name}.styx.test,127.0.0.1`,
    ]);

  function launch(name: string, dnsName: string, logs: string[] = []): Promise<BrokerProcess> {
    return startBroker({
      dataDir: join(root, name),
      management: true,
      startTimeoutMs: 90_000,
      logs,
      onSpawn: (child) => children.push(child),
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${clusterPorts.get(name)}`,
        '--node-name',
        name,
        '--cluster-secret-file',
        secretFile,
        '--discover-dns',
        dnsName,
        '--discover-dns-server',
        dns.server,
      ],
    });
  }

  async function membersSeenBy(node: BrokerProcess): Promise<NodeJson[]> {
    return managementApi<NodeJson[]>(node.managementUrl, '/api/nodes');
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'styx-dns-'));
    secretFile = join(root, 'secret');
    await writeFile(secretFile, 'a cluster secret for this test only\n', { mode: 0o600 });
    for (const name of ['n1', 'n2', 'n3', 'n4']) clusterPorts.set(name, await freePort());
    dns = await Dnsmasq.start(root, records(SERVICE, ['n1', 'n2', 'n3']));
  });

  afterAll(async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }),
    );
    await dns?.stop();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('three fresh nodes whose only join information is a DNS name form one cluster', async () => {
    nodes.push(...(await Promise.all(['n1', 'n2', 'n3'].map((name) => launch(name, SERVICE)))));
    for (const node of nodes) {
      await eventually(
        `${node.managementUrl} to see n1, n2 and n3 running`,
        async () => {
          const members = await membersSeenBy(node);
          return (
            members
              .map((m) => m.name)
              .sort()
              .join() === 'n1,n2,n3' && members.every((m) => m.running)
          );
        },
        60_000,
      );
    }
    // One node formed the cluster, the one whose address sorts first; the others joined it.
    const logs = nodes.flatMap((node) => node.logs.map((line) => JSON.parse(line) as { msg?: string }));
    expect(logs.filter((l) => l.msg?.includes('forming the cluster') === true)).toHaveLength(1);
    expect(logs.filter((l) => l.msg?.startsWith('DNS discovery: joining the cluster') === true)).toHaveLength(
      2,
    );
  }, 150_000);

  it('a node whose name does not resolve stays up, logs and retries; it joins once DNS lists it', async () => {
    const logs: string[] = [];
    let exited: unknown;
    const starting = launch('n4', LATE, logs);
    starting.catch((error: unknown) => {
      exited = error;
    });
    const failures = (): string[] => logs.filter((line) => line.includes('DNS discovery failed'));
    await eventually('n4 to log two failed lookups', async () => failures().length >= 2, 30_000);
    expect(exited).toBeUndefined();
    expect(failures()[0]).toContain(`no SRV records for ${LATE}`);
    // The record appears (with the three members and n4 itself, which n4 skips).
    await dns.setRecords([
      ...records(SERVICE, ['n1', 'n2', 'n3']),
      ...records(LATE, ['n1', 'n2', 'n3', 'n4']),
    ]);
    const n4 = await starting;
    nodes.push(n4);
    for (const node of [nodes[0] as BrokerProcess, n4]) {
      await eventually(
        'every node to see n4 running',
        async () => {
          const members = await membersSeenBy(node);
          return members.length === 4 && members.every((m) => m.running);
        },
        60_000,
      );
    }
  }, 150_000);
});
