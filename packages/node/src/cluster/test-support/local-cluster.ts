import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import type { Logger } from '../../logging/logger.ts';
import { ClusterRpc } from '../cluster-rpc.ts';
import { swarmKeyFromSecret } from '../cluster-secret.ts';
import { ClusterGater } from '../connection-gater.ts';
import type { NodeBuild } from '../feature-flags.ts';
import type { ClusterLibp2p } from '../libp2p-node.ts';
import { createClusterNode, listenAddress } from '../libp2p-node.ts';
import { Libp2pTransport } from '../libp2p-transport.ts';
import type { NodeIdentity } from '../node-identity.ts';
import { loadNodeIdentity } from '../node-identity.ts';
import { PeerHello } from '../peer-hello.ts';

/** The secret the test nodes share unless a test gives one another. */
export const TEST_SECRET = 'a test cluster secret, shared by every node';

/** A logger that keeps every line as an object, for tests that check what was logged. */
export function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

/** One node on loopback: identity, gater, libp2p host, Raft transport and cluster RPC. */
export interface LocalNode {
  readonly identity: NodeIdentity;
  readonly nodeId: string;
  readonly gater: ClusterGater;
  readonly node: ClusterLibp2p;
  readonly transport: Libp2pTransport;
  readonly rpc: ClusterRpc;
  /** Its hello, when started with a `build` (else it answers no hello, as a build from before it). */
  readonly hello: PeerHello | undefined;
  /** `127.0.0.1:port` it listens on. */
  readonly address: string;
  readonly logger: Logger;
  readonly lines: Record<string, unknown>[];
}

export interface LocalNodeOptions {
  /** Default `TEST_SECRET`. */
  readonly secret?: string;
  /** The ids its gater admits (default: none but what the caller adds later). */
  readonly members?: Iterable<string>;
  readonly dialTimeoutMs?: number;
  readonly drainTimeoutMs?: number;
  readonly maxFrameBytes?: number;
  /** The gater's `openToJoins` (default false). */
  readonly openToJoins?: boolean;
  /** The RPC's `admit` (default: every peer). */
  readonly rpcAdmit?: (peerId: string, kind: string) => boolean;
  readonly rpcTimeoutMs?: number;
  readonly rpcMaxMessageBytes?: number;
  /** Announce this build in a hello (peer-hello.ts) and name versions from it; default: no hello. */
  readonly build?: NodeBuild;
}

/**
 * Starts nodes on 127.0.0.1 (ephemeral ports) with data dirs under one temporary directory, and
 * stops them all and removes the directory in `stop`.
 */
export class LocalCluster {
  readonly nodes: LocalNode[] = [];
  /** The temporary directory, made once even when several data dirs are asked for at once. */
  #root: Promise<string> | undefined;

  /** A fresh data dir under the cluster's temporary directory. */
  async dataDir(): Promise<string> {
    this.#root ??= mkdtemp(join(tmpdir(), 'styx-cluster-'));
    return mkdtemp(join(await this.#root, 'node-'));
  }

  /** The identity of a new node (made in a fresh data dir). */
  async identity(): Promise<NodeIdentity> {
    return loadNodeIdentity(await this.dataDir());
  }

  /** Start a node with `identity`; its transport is not told of any peer yet. */
  async start(identity: NodeIdentity, options: LocalNodeOptions = {}): Promise<LocalNode> {
    const { logger, lines } = captureLogger();
    const gater = new ClusterGater(logger, options.members ?? [], {
      openToJoins: options.openToJoins ?? false,
    });
    const node = await createClusterNode({
      privateKey: identity.privateKey,
      listen: '127.0.0.1:0',
      swarmKey: swarmKeyFromSecret(options.secret ?? TEST_SECRET),
      gater,
      logger,
    });
    const hello =
      options.build === undefined ? undefined : await PeerHello.start({ node, logger, build: options.build });
    const versions = hello === undefined ? {} : { versions: hello };
    const transport = await Libp2pTransport.start({
      node,
      logger,
      dialTimeoutMs: options.dialTimeoutMs ?? 2_000,
      // As a clustered node runs it: only members feed the Raft groups.
      admit: (peer) => gater.isMember(peer),
      ...(options.maxFrameBytes === undefined ? {} : { maxFrameBytes: options.maxFrameBytes }),
      ...(options.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: options.drainTimeoutMs }),
      ...versions,
    });
    const rpc = await ClusterRpc.start({
      node,
      logger,
      gater,
      timeoutMs: options.rpcTimeoutMs ?? 2_000,
      ...(options.rpcAdmit === undefined ? {} : { admit: options.rpcAdmit }),
      ...(options.rpcMaxMessageBytes === undefined ? {} : { maxMessageBytes: options.rpcMaxMessageBytes }),
      ...versions,
    });
    const local: LocalNode = {
      identity,
      nodeId: identity.nodeId,
      gater,
      node,
      transport,
      rpc,
      hello,
      address: listenAddress(node),
      logger,
      lines,
    };
    this.nodes.push(local);
    return local;
  }

  /** `count` nodes that all admit each other and know each other's addresses. */
  async startMesh(count: number): Promise<LocalNode[]> {
    const identities = await Promise.all(Array.from({ length: count }, () => this.identity()));
    const members = identities.map((i) => i.nodeId);
    const nodes: LocalNode[] = [];
    for (const identity of identities) nodes.push(await this.start(identity, { members }));
    for (const a of nodes) {
      for (const b of nodes) {
        if (a === b) continue;
        a.transport.addPeer(b.nodeId, b.address);
        a.rpc.addPeer(b.nodeId, b.address);
      }
    }
    return nodes;
  }

  /** Stop one node (RPC, transport, then libp2p host): its peers see its connections close. */
  async stopNode(local: LocalNode): Promise<void> {
    await local.rpc.close();
    await local.transport.close();
    await local.hello?.close();
    await local.node.stop();
  }

  /** Stop every node and remove the data dirs. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.stopNode(n)));
    this.nodes.length = 0;
    if (this.#root !== undefined) await rm(await this.#root, { recursive: true, force: true });
    this.#root = undefined;
  }
}

/** A loopback `host:port` where nothing listens (a port bound, then released). */
export async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `127.0.0.1:${address.port}`;
}
