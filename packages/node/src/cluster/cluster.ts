import { randomBytes } from 'node:crypto';
import { ReplyCode } from '@styx/client/wire';
import { NotLeaderError, PeerUnreachableError } from '@styx/raft';
import type { BrokerCluster } from '../broker/broker-cluster.ts';
import type { PeerStatus } from '../broker/owner-suspicion.ts';
import { Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { metadataCommandCodec } from '../metadata/command-codec.ts';
import { fieldJsonReplacer, fieldJsonReviver } from '../metadata/field-values.ts';
import type { MetadataGroup } from '../metadata/metadata-group.ts';
import type { ClusterNodeRecord, MetadataCommand, MetadataReply } from '../metadata/metadata-machine.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { raftHostOf } from '../storage/raft-groups.ts';
import { PRETEND_OLDER_ENV, pretendOlder } from '../test-support/pretend-older.ts';
import { ClusterFeatureFlags } from './cluster-feature-flags.ts';
import { ClusterGossip } from './cluster-gossip.ts';
import { ClusterRpc, RpcError, RpcRemoteError } from './cluster-rpc.ts';
import type { ClusterMemberStatus, ClusterView } from './cluster-view.ts';
import {
  ClusterChangeRefusedError,
  ClusterNodeNotFoundError,
  ClusterUnavailableError,
} from './cluster-view.ts';
import { ClusterGater } from './connection-gater.ts';
import type { DnsDiscovery } from './dns-discovery.ts';
import { ClusterError } from './errors.ts';
import type { DetectorEvent } from './failure-detector.ts';
import { FailureDetector } from './failure-detector.ts';
import type { NodeBuild } from './feature-flags.ts';
import { BATCHED_REMOTE_SENDS_FLAG, buildOf } from './feature-flags.ts';
import type { ClusterLibp2p } from './libp2p-node.ts';
import { createClusterNode, listenAddress } from './libp2p-node.ts';
import { Libp2pTransport } from './libp2p-transport.ts';
import { MembershipReconciler } from './membership-reconciler.ts';
import type { NodeIdentity } from './node-identity.ts';
import { PeerHello } from './peer-hello.ts';
import { CLUSTER_PROTOCOL_VERSION, receivedUnknown, UnknownMessageLog } from './protocol-version.ts';
import { QueueLink } from './queue-link.ts';
import { QueueOp } from './queue-rpc-codec.ts';
import type { SeedAnswer } from './seed-formation.ts';
import { decideSeeds, isOwnAddress, localInterfaceAddresses } from './seed-formation.ts';

/** This node could not join the cluster: refused (forgotten, its name taken) or no member answered. */
export class ClusterJoinError extends ClusterError {
  constructor(reason: string) {
    super('CLUSTER_JOIN_FAILED', reason);
  }
}

/** RPC kinds nodes answer for each other. */
const RPC_JOIN = 'join';
const RPC_METADATA = 'metadata';
const RPC_FORGET = 'forget';
/** Liveness probe between members (see `#probe`); answered with the node's incarnation. */
const RPC_PING = 'ping';
const EMPTY = new Uint8Array(0);
/** How long a member may take to answer a ping, ms. */
const PING_TIMEOUT_MS = 1_000;
/**
 * A gap this long between two runs of the redial timer (every `KEEP_CONNECTED_MS`) means this
 * process did not run (SIGSTOP, a blocked event loop): see failure-detector.ts.
 */
const STALL_THRESHOLD_MS = 4_000;
/** The monotonic clock of the failure detector (never the wall clock: it may jump). */
const monotonicNow = (): number => performance.now();

/** The metadata group's id (as the broker creates it). */
const METADATA_GROUP = 'metadata';
/** How long a node keeps asking to join before it gives up, ms (the seeds may start later). */
const JOIN_DEADLINE_MS = 120_000;
/** Pause between join attempts, ms. */
const JOIN_RETRY_MS = 1_000;
/** How long a forwarded metadata change may wait for a leader to be known or reachable, ms. */
const FORWARD_DEADLINE_MS = 15_000;
/**
 * How long one call to the metadata leader may take, ms: a leader that is paused or wedged never
 * refuses. A call that gave up before its stream opened sent nothing and is retried with the leader
 * known then; one that sent its request and got no answer is reported with an unknown outcome (541),
 * never retried, so a change is never applied twice.
 */
const FORWARD_ATTEMPT_MS = 2_000;
/** Pause between attempts to find the metadata leader, ms. */
const FORWARD_RETRY_MS = 100;
/** How often a node redials the members it has no connection to, ms. */
const KEEP_CONNECTED_MS = 1_000;
/**
 * How long one of those redials may take, ms: short, so that a dial whose SYNs a partition dropped
 * is soon replaced by a fresh one (Linux retransmits a SYN after 1 s, then 2 s, 4 s later), and a
 * heal is noticed within about a second.
 */
const KEEP_CONNECTED_DIAL_MS = 2_000;
/** A barrier's wait for the leader's confirmation while catching up after a join, ms. */
const CATCH_UP_BARRIER_MS = 5_000;
/**
 * DNS discovery's pause between two lookups while undecided, ms: doubling from the first to the
 * last after each lookup that failed or left the node waiting, back to the first when the listed
 * nodes change (a DNS server that is down is not hammered; a record added is seen within 10 s).
 */
const DISCOVERY_RETRY_MIN_MS = 1_000;
const DISCOVERY_RETRY_MAX_MS = 10_000;
/** How long a listed node may take to answer discovery's probe, ms. */
const PROBE_TIMEOUT_MS = 3_000;

export interface ClusterStartOptions {
  readonly storage: NodeStorage;
  readonly identity: NodeIdentity;
  /** The private-network key made from the cluster secret. */
  readonly swarmKey: Uint8Array;
  /** Where to listen for other nodes, `host:port`. */
  readonly listen: string;
  /** Addresses of members to join through (a fresh data dir) or to announce to (a restart). */
  readonly join: readonly string[];
  /**
   * Where the cluster's nodes are listed (DNS discovery, dns-discovery.ts): with an empty data dir,
   * the node looks them up until it joins a cluster or forms one (seed-formation.ts).
   */
  readonly discovery?: Pick<DnsDiscovery, 'description' | 'lookup'>;
  /** This process's incarnation id (default: a fresh random one, as every start should have). */
  readonly incarnation?: string;
  /** The node's readable name, unique in the cluster. */
  readonly nodeName: string;
  readonly logger: Logger;
  /**
   * The version and feature flags this node announces (default: this build's; one version older
   * with the test-only `STYX_TEST_PRETEND_OLDER=1`, see test-support/pretend-older.ts).
   */
  readonly build?: NodeBuild;
}

/** The queue-link ops this version knows: a request of another op is answered as unknown. */
const KNOWN_QUEUE_OPS: ReadonlySet<number> = new Set(Object.values(QueueOp));

/**
 * Ops a build answers only with their feature flag: a build without it (a pretend-older node)
 * answers them as unknown, as the older build would.
 */
const QUEUE_OP_FLAGS: ReadonlyMap<number, string> = new Map([[QueueOp.batch, BATCHED_REMOTE_SENDS_FLAG]]);

/** Whether a node of `build` answers queue-link `op`. */
function knowsQueueOp(build: NodeBuild, op: number): boolean {
  const flag = QUEUE_OP_FLAGS.get(op);
  return KNOWN_QUEUE_OPS.has(op) && (flag === undefined || build.flags.has(flag));
}

/** A join request: who is asking, and where it listens. */
interface JoinRequest {
  readonly id: string;
  readonly peerId: string;
  readonly name: string;
  readonly address: string;
  /** The joiner's cluster protocol version and feature flags (absent from builds before them). */
  readonly version?: number;
  readonly flags?: readonly string[];
  /**
   * Discovery's question (seed-formation.ts): is the node asked a cluster member already? Answered
   * with a `ProbeResponse`, nothing recorded. (A build from before discovery takes it for a join,
   * which the real join that follows repeats.)
   */
  readonly probe?: boolean;
}

/** The answer to a probe. */
interface ProbeResponse {
  readonly clustered: boolean;
}

/** The answer to a join: the cluster's members, so the joiner can reach them at once. */
interface JoinResponse {
  readonly members: readonly ClusterNodeRecord[];
  readonly leader: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, fieldJsonReplacer));
}

function decodeJson<T>(bytes: Uint8Array): T {
  return JSON.parse(decoder.decode(bytes), fieldJsonReviver) as T;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A node's membership of a Styx cluster: its libp2p host, the Raft transport its groups run on,
 * the RPCs nodes answer for each other (join, metadata changes forwarded to the leader, forget), the
 * gossip of cluster events, and — while this node leads the metadata group — the reconciler that
 * keeps the group's voters in step with the cluster's members.
 *
 * Who belongs is decided by the metadata group alone (its `clusterNodes` table, changed through
 * Raft): the gater, the transport's address book and the RPC peers follow each applied change.
 * Gossip only speeds things up; nothing here depends on it.
 */
export class Cluster implements BrokerCluster {
  readonly nodeId: string;
  readonly incarnation: string;
  readonly nodeName: string;
  /** Where other nodes reach this one, `host:port`. */
  readonly address: string;
  /** The metadata replica opens as a joiner (a fresh data dir joining a cluster): see `joining`. */
  #joining: boolean;
  /** Where a joining node asks to join: `--join`'s addresses, or the members discovery found. */
  #joinSeeds: readonly string[];
  readonly #options: ClusterStartOptions;
  readonly #log: Logger;
  readonly #node: ClusterLibp2p;
  readonly #gater: ClusterGater;
  readonly #transport: Libp2pTransport;
  readonly #rpc: ClusterRpc;
  /** Queue commands and deliveries between nodes (see queue-link.ts). */
  readonly queueLink: QueueLink;
  readonly #gossip: ClusterGossip;
  readonly #hello: PeerHello;
  /** The feature flags: which this build supports, which the cluster enabled (feature-flags.ts). */
  readonly featureFlags: ClusterFeatureFlags;
  readonly #downListeners = new Set<(nodeId: string) => void>();
  readonly #upListeners = new Set<(nodeId: string) => void>();
  #group: MetadataGroup | undefined;
  #reconciler: MembershipReconciler | undefined;
  /** Peers currently in the address books (node id → address). */
  readonly #known = new Map<string, string>();
  #stopped = false;
  #connectTimer: NodeJS.Timeout | undefined;
  /** Members with a ping in flight. */
  readonly #probing = new Set<string>();
  /** Suspicion of members that miss pings or lose their connection (see failure-detector.ts). */
  readonly #detector = new FailureDetector({
    stallThresholdMs: STALL_THRESHOLD_MS,
    onEvent: (event) => this.#onDetectorEvent(event),
  });

  private constructor(
    options: ClusterStartOptions,
    parts: {
      node: ClusterLibp2p;
      gater: ClusterGater;
      transport: Libp2pTransport;
      rpc: ClusterRpc;
      queueLink: QueueLink;
      gossip: ClusterGossip;
      hello: PeerHello;
    },
  ) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'cluster' });
    this.nodeId = options.identity.nodeId;
    this.incarnation = options.incarnation ?? randomBytes(6).toString('base64url');
    this.nodeName = options.nodeName;
    this.#node = parts.node;
    this.#gater = parts.gater;
    this.#transport = parts.transport;
    // A member whose Raft traffic arrives is running and reaching us, whatever its pings say (they
    // queue behind that traffic on the same connection): failure-detector.ts, `heardFrom`.
    parts.transport.onHeardFrom((peer) => this.#detector.heardFrom(peer, monotonicNow()));
    this.#rpc = parts.rpc;
    this.queueLink = parts.queueLink;
    this.#gossip = parts.gossip;
    this.#hello = parts.hello;
    this.featureFlags = new ClusterFeatureFlags({
      selfId: options.identity.nodeId,
      hello: parts.hello,
      logger: options.logger,
      propose: (command) => this.#proposeOrForward(command),
    });
    this.address = listenAddress(parts.node);
    // A data dir that holds no metadata group yet joins the cluster it is pointed at; one that
    // holds it is a member already (restarted) or the node that formed the cluster.
    this.#joining =
      options.join.length > 0 && options.storage.logStore.hardState(METADATA_GROUP) === undefined;
    this.#joinSeeds = options.join;
  }

  /** Whether this node joins a cluster (a fresh data dir with members to join through). */
  get joining(): boolean {
    return this.#joining;
  }

  /**
   * Start the node's libp2p host and the transport of its Raft groups. Call before the broker opens
   * any group (the node's Raft host is created here, with the transport).
   */
  static async start(options: ClusterStartOptions): Promise<Cluster> {
    const { storage, identity, logger } = options;
    if (storage.nodeId !== identity.nodeId) {
      throw new ClusterJoinError(
        `this data dir was created before clustering (node id ${storage.nodeId}, not the node's ` +
          `peer id ${identity.nodeId}); start it without --cluster-listen, or give clustering a new data dir`,
      );
    }
    // The secret is the operator's approval to ask for a join: strangers holding it may connect,
    // but only members reach the Raft transport and the member-only RPCs.
    const gater = new ClusterGater(logger, [identity.nodeId], { openToJoins: true });
    if (pretendOlder.error !== undefined) throw new ClusterJoinError(pretendOlder.error);
    const build = options.build ?? buildOf(CLUSTER_PROTOCOL_VERSION - (pretendOlder.on ? 1 : 0));
    if (pretendOlder.on) {
      logger.warn(
        { version: build.version, flags: [...build.flags] },
        `${PRETEND_OLDER_ENV} is set: this node pretends to run the previous cluster protocol version (testing only)`,
      );
    }
    const node = await createClusterNode({
      privateKey: identity.privateKey,
      listen: options.listen,
      swarmKey: options.swarmKey,
      gater,
      logger,
    });
    try {
      // First, so that the streams below can name each peer's version from its first connection.
      const hello = await PeerHello.start({ node, logger, build });
      const transport = await Libp2pTransport.start({
        node,
        logger,
        admit: (peer) => gater.isMember(peer),
        versions: hello,
      });
      const rpc = await ClusterRpc.start({
        node,
        logger,
        gater,
        admit: (peer, kind) => kind === RPC_JOIN || gater.isMember(peer),
        versions: hello,
      });
      const queueLink = await QueueLink.start({
        node,
        logger,
        admit: (peer) => gater.isMember(peer),
        knowsOp: (op) => knowsQueueOp(build, op),
        versions: hello,
      });
      const unknownEvents = new UnknownMessageLog(logger.child({ component: 'cluster-gossip' }));
      const gossip = new ClusterGossip(node.services.pubsub, logger, (kind, from) => {
        const self = identity.nodeId;
        const { message, text } = receivedUnknown(hello, self, from, 'gossip', `event kind '${kind}'`);
        unknownEvents.report(message, text, 'received');
      });
      gossip.start();
      raftHostOf(storage, transport);
      const cluster = new Cluster(options, { node, gater, transport, rpc, queueLink, gossip, hello });
      node.addEventListener('peer:disconnect', (event) => cluster.#disconnected(event.detail.toString()));
      node.addEventListener('peer:connect', (event) => cluster.#connected(event.detail.toString()));
      // Answered from now on: discovery's probes come before the metadata group exists.
      rpc.handle(RPC_JOIN, (payload, from) => cluster.#onJoin(payload, from));
      const fresh = storage.logStore.hardState(METADATA_GROUP) === undefined;
      if (options.discovery !== undefined && fresh) await cluster.#discoverSeeds(options.discovery);
      return cluster;
    } catch (error) {
      await node.stop();
      throw error;
    }
  }

  // ------------------------------------------------------------------------------ BrokerCluster

  async attach(group: MetadataGroup): Promise<void> {
    this.#group = group;
    this.featureFlags.attach(group);
    // A member's metadata lists the members; only the node forming a new cluster finds none.
    const forming = !this.joining && group.state.clusterNodes().length === 0;
    group.onApplied((command) => {
      const membership =
        command === undefined || command.type === 'addClusterNode' || command.type === 'forgetClusterNode';
      if (membership) this.#syncPeers();
    });
    this.#syncPeers();
    this.#rpc.handle(RPC_METADATA, (payload) => this.#onMetadata(payload));
    this.#rpc.handle(RPC_FORGET, (payload) => this.#onForget(payload));
    const incarnation = encoder.encode(this.incarnation);
    this.#rpc.handle(RPC_PING, async () => incarnation);
    this.#reconciler = new MembershipReconciler({ group, logger: this.#log });
    if (this.joining) {
      await this.#join();
    } else {
      // A member restarted (or the node that formed the cluster): make sure the membership has its
      // current name and address. Not waited for when the leader is elsewhere and unreachable.
      const announcing = this.#announceSelf().then(() =>
        forming ? this.featureFlags.enableAtFormation() : undefined,
      );
      if (group.log.role === 'leader') await announcing;
      else
        announcing.catch((error: unknown) => this.#log.warn({ err: error }, 'could not announce this node'));
    }
    this.#reconciler.start();
    this.#keepConnected();
    this.#gossipEvents(group);
    void this.#gossip
      .publish({ kind: 'node-up', nodeId: this.nodeId, address: this.address, incarnation: this.incarnation })
      .catch(() => undefined);
  }

  async forward(command: MetadataCommand, leaderHint: string | undefined): Promise<MetadataReply> {
    const payload = metadataCommandCodec.encode(command);
    let response: Uint8Array;
    try {
      response = await this.#callLeader(RPC_METADATA, payload, leaderHint, () =>
        (this.#group as MetadataGroup).log.propose(command).then(encodeJson),
      );
    } catch (error) {
      if (error instanceof ConnectionError) throw error;
      throw new ConnectionError(
        Code.INTERNAL_ERROR,
        `metadata change failed on the leader: ${String(error)}`,
      );
    }
    return decodeJson<MetadataReply>(response);
  }

  /**
   * Whether `nodeId` is down as far as this node can tell: no connection to it, or suspected (it
   * missed pings in a row: a paused process keeps its sockets open). Down is not gone: see
   * `peerStatus` for what a caller may conclude.
   */
  isDown(nodeId: string): boolean {
    if (nodeId === this.nodeId) return false;
    if (this.#countedDown(nodeId)) return true;
    return !this.#node.getConnections().some((c) => c.remotePeer.toString() === nodeId);
  }

  peerStatus(nodeId: string): PeerStatus {
    return {
      suspected: this.#detector.isSuspected(nodeId),
      unreachableMs: this.#detector.unreachableFor(nodeId, monotonicNow()),
      incarnation: this.#detector.incarnationOf(nodeId),
    };
  }

  /**
   * Answer cluster RPCs of `kind` (broker-level kinds: queue body repair, replica checks). Only
   * members reach a handler; the handler gets the caller's peer id.
   */
  handleRpc(kind: string, handler: (payload: Uint8Array, from: string) => Promise<Uint8Array>): void {
    this.#rpc.handle(kind, handler);
  }

  /** Call `kind` on member `nodeId`; rejects as `ClusterRpc.call` does (unreachable, timeout, remote error). */
  callRpc(nodeId: string, kind: string, payload: Uint8Array, timeoutMs?: number): Promise<Uint8Array> {
    return this.#rpc.call(nodeId, kind, payload, timeoutMs);
  }

  /** Called with a node's id each time it is suspected (disconnected, or missed its pings). */
  onNodeDown(listener: (nodeId: string) => void): () => void {
    this.#downListeners.add(listener);
    return () => this.#downListeners.delete(listener);
  }

  /**
   * Called with a node's id each time it is reachable again: it answers a ping after it was
   * suspected (a restarted node, as a new incarnation), or it connected without being suspected.
   */
  onNodeUp(listener: (nodeId: string) => void): () => void {
    this.#upListeners.add(listener);
    return () => this.#upListeners.delete(listener);
  }

  /** A connection to a member opened: ping it now (a suspected member recovers by answering). */
  #connected(nodeId: string): void {
    if (this.#stopped || !this.#known.has(nodeId)) return;
    void this.#probe(nodeId);
    if (!this.#detector.isSuspected(nodeId)) this.#nodeUp(nodeId);
  }

  /** Every connection to a member closed: suspected (redialled every second, pinged once connected). */
  #disconnected(nodeId: string): void {
    if (this.#stopped || !this.#known.has(nodeId)) return;
    this.#detector.disconnected(nodeId, monotonicNow());
  }

  #onDetectorEvent(event: DetectorEvent): void {
    switch (event.type) {
      case 'suspected':
        this.#log.warn(
          { node: event.peer, reason: event.reason },
          'a member is suspected: its consumers get no new messages until it answers',
        );
        // The Raft groups it leads are woken (they elect another leader if it is really gone).
        if (event.reason === 'missed-pings') {
          this.#transport.reportDown(event.peer);
          this.#dropSilentConnections(event.peer);
        }
        this.#nodeDown(event.peer);
        break;
      case 'recovered':
        this.#log.info(
          { node: event.peer, unreachableMs: Math.round(event.unreachableMs) },
          'a member answers again',
        );
        this.#nodeUp(event.peer);
        break;
      case 'restarted':
        this.#log.info(
          { node: event.peer, incarnation: event.incarnation, previous: event.previous },
          'a member restarted (a new incarnation): what its former process held is gone',
        );
        break;
      case 'stalled':
        this.#log.warn(
          { pausedMs: Math.round(event.pausedMs) },
          'this process did not run for a while (paused or stalled): pings in flight do not count, members get a fresh chance',
        );
        break;
    }
  }

  #nodeUp(nodeId: string): void {
    if (this.#stopped || !this.#known.has(nodeId)) return;
    for (const listener of this.#upListeners) {
      try {
        listener(nodeId);
      } catch (error) {
        this.#log.error({ err: error, node: nodeId }, 'node-up listener failed');
      }
    }
  }

  #nodeDown(nodeId: string): void {
    if (this.#stopped || !this.#known.has(nodeId)) return;
    for (const listener of this.#downListeners) {
      try {
        listener(nodeId);
      } catch (error) {
        this.#log.error({ err: error, node: nodeId }, 'node-down listener failed');
      }
    }
  }

  // ------------------------------------------------------------------------------ operator view

  /** The cluster as `styx ctl cluster_status` and the management API show it. */
  view(): ClusterView {
    return {
      self: () => ({ id: this.nodeId, name: this.nodeName }),
      members: () => this.#members(),
      metadataLeader: () => this.#group?.log.leader,
      join: async () => {
        throw new ClusterChangeRefusedError(
          'this node is a cluster member already, with metadata of its own that joining another ' +
            'cluster would discard: start a node with an empty --data-dir and --join HOST:PORT instead',
        );
      },
      forget: (idOrName: string) => this.#forget(idOrName),
      featureFlags: this.featureFlags,
    };
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#reconciler?.stop();
    if (this.#connectTimer !== undefined) clearInterval(this.#connectTimer);
    await this.#gossip
      .publish({ kind: 'node-down', nodeId: this.nodeId })
      .then(() => undefined)
      .catch(() => undefined);
    this.#gossip.stop();
    await this.queueLink.close();
    await this.#rpc.close();
    await this.#transport.close();
    await this.#hello.close();
    await this.#node.stop();
  }

  // ------------------------------------------------------------------------------ internals

  /** forget_cluster_node: the leader records it; the reconciler then drops its replica. */
  async #forget(idOrName: string): Promise<void> {
    try {
      const payload = encodeJson({ node: idOrName });
      await this.#callLeader(RPC_FORGET, payload, undefined, () => this.#onForget(payload));
    } catch (error) {
      const code = error instanceof RpcError || error instanceof RpcRemoteError ? error.code : undefined;
      const text = error instanceof Error ? error.message : String(error);
      if (code === String(ReplyCode.NOT_FOUND)) throw new ClusterNodeNotFoundError(text);
      if (code === String(ReplyCode.PRECONDITION_FAILED)) throw new ClusterChangeRefusedError(text);
      throw new ClusterUnavailableError(text, { cause: error });
    }
  }

  #members(): ClusterMemberStatus[] {
    const group = this.#group;
    if (group === undefined) return [];
    const conf = group.log.membership;
    const voters = new Set([...conf.voters, ...conf.votersOutgoing]);
    const learners = new Set([...conf.learners, ...conf.learnersNext]);
    const connected = new Set(this.#node.getConnections().map((c) => c.remotePeer.toString()));
    return group.state.clusterNodes().map((record) => ({
      id: record.id,
      peerId: record.peerId,
      name: record.name,
      address: record.address,
      isSelf: record.id === this.nodeId,
      online: record.id === this.nodeId || (connected.has(record.peerId) && !this.#countedDown(record.id)),
      voter: voters.has(record.id) ? 'voter' : learners.has(record.id) ? 'learner' : 'none',
    }));
  }

  /**
   * Keep a connection to every member, redialled every second while it is down: followers of the
   * metadata group exchange no Raft traffic, yet each node shows which members are online, and
   * gossip spreads over these connections.
   */
  #keepConnected(): void {
    const dial = (): void => {
      // First: a late run of this timer is how a local stall is noticed (failure-detector.ts).
      this.#detector.tick(monotonicNow());
      const connected = new Set(this.#node.getConnections().map((c) => c.remotePeer.toString()));
      for (const id of this.#known.keys()) {
        if (connected.has(id)) {
          void this.#probe(id);
          continue;
        }
        // A member this node cannot even dial misses its ping (one never reached since this node
        // started is suspected, and timed out, like one that went away).
        const token = this.#detector.pingStarted(id, monotonicNow());
        this.#transport.connect(id, KEEP_CONNECTED_DIAL_MS).catch(() => {
          if (this.#known.has(id)) this.#detector.pingMissed(id, token, monotonicNow());
        });
      }
    };
    this.#connectTimer = setInterval(dial, KEEP_CONNECTED_MS);
    this.#connectTimer.unref();
    dial();
  }

  /**
   * Cluster events by gossip, hints only: this node announces itself and the metadata leadership it
   * wins; a member announcing itself is dialled at once rather than at the next redial.
   */
  #gossipEvents(group: MetadataGroup): void {
    group.log.onRole((change) => {
      if (change.role !== 'leader' || this.#stopped) return;
      const event = {
        kind: 'group-leader',
        groupId: METADATA_GROUP,
        term: change.term,
        leader: this.nodeId,
      } as const;
      void this.#gossip.publish(event).catch(() => undefined);
    });
    this.#gossip.subscribe((event, from) => {
      this.#log.debug({ event, from }, 'cluster event');
      if (event.kind === 'node-up' && this.#known.has(event.nodeId)) {
        if (event.incarnation !== undefined)
          this.#detector.announced(event.nodeId, event.incarnation, monotonicNow());
        this.#transport.connect(event.nodeId).catch(() => undefined);
      }
    });
  }

  /**
   * Liveness of a connected member: it must answer a ping within `PING_TIMEOUT_MS`. A process that
   * is paused (SIGSTOP) or wedged keeps its sockets open, so a closed connection alone would never
   * tell; the Raft groups it leads may be quiesced (their followers not ticking) and would wait for
   * it forever. Two missed pings in a row make it suspected: the host wakes those groups, queues
   * stop delivering to its consumers, and `cluster_status` shows it offline until it answers again.
   * The answer carries its incarnation: a new one means it restarted.
   */
  #countedDown(id: string): boolean {
    return this.#detector.isSuspected(id);
  }

  async #probe(id: string): Promise<void> {
    if (this.#probing.has(id) || this.#stopped) return;
    this.#probing.add(id);
    const token = this.#detector.pingStarted(id, monotonicNow());
    try {
      const answer = await this.#rpc.call(id, RPC_PING, EMPTY, PING_TIMEOUT_MS);
      // A node from before incarnations answers with nothing: never taken for a restart.
      const incarnation = answer.byteLength > 0 ? decoder.decode(answer) : undefined;
      if (this.#known.has(id)) this.#detector.pingAnswered(id, incarnation, monotonicNow());
    } catch {
      if (this.#known.has(id)) this.#detector.pingMissed(id, token, monotonicNow());
    } finally {
      this.#probing.delete(id);
    }
  }

  /** Make the gater, the transport and the RPC address book follow the applied membership. */
  #syncPeers(): void {
    const state = this.#group?.state;
    if (state === undefined || this.#stopped) return;
    const members = state.clusterNodes();
    this.#gater.setMembers([this.nodeId, ...members.map((m) => m.peerId)]);
    for (const id of state.forgottenNodes()) this.#gater.forget(id);
    const current = new Set<string>();
    for (const member of members) {
      if (member.id === this.nodeId) continue;
      current.add(member.id);
      this.#addPeer(member.id, member.address);
    }
    for (const id of [...this.#known.keys()]) if (!current.has(id)) this.#dropPeer(id);
  }

  #addPeer(id: string, address: string): void {
    if (this.#known.get(id) === address) return;
    this.#known.set(id, address);
    this.#transport.addPeer(id, address);
    this.#rpc.addPeer(id, address);
    this.queueLink.addPeer(id, address);
  }

  /**
   * A member that stopped answering pings over a connection that is still open: abort that
   * connection, so the redial timer opens a fresh one. Why: a partition or a lossy link black-holes
   * the packets of an established connection, and TCP then retransmits with exponential back-off
   * (0.2, 0.4 ... 6.4, 12.8 s apart): after a heal, everything on the old connection (Raft, queue
   * link, pings) waits for the next retransmission, up to about as long as the fault lasted (a
   * chaos run saw a node answer 3.8 s after a 7 s partition healed). A new connection's SYN goes out
   * at each dial. A paused member finds the connection reset when it resumes and dials back.
   */
  #dropSilentConnections(id: string): void {
    let dropped = 0;
    for (const connection of this.#node.getConnections()) {
      if (connection.remotePeer.toString() !== id) continue;
      connection.abort(new Error('peer stopped answering pings'));
      dropped++;
    }
    if (dropped > 0)
      this.#log.info(
        { node: id, connections: dropped },
        'connection to a silent member dropped: dialling a new one',
      );
  }

  #dropPeer(id: string): void {
    if (!this.#known.delete(id)) return;
    this.#detector.remove(id);
    this.#transport.removePeer(id);
    this.#rpc.removePeer(id);
    this.queueLink.removePeer(id);
    for (const connection of this.#node.getConnections()) {
      if (connection.remotePeer.toString() === id) void connection.close().catch(() => undefined);
    }
  }

  #selfRecord(): JoinRequest {
    return { id: this.nodeId, peerId: this.nodeId, name: this.nodeName, address: this.address };
  }

  /** Record this node in the membership (its address may have changed since it was recorded). */
  async #announceSelf(): Promise<void> {
    const group = this.#group as MetadataGroup;
    const self = this.#selfRecord();
    const recorded = group.state.clusterNode(self.id);
    if (recorded !== undefined && recorded.address === self.address && recorded.name === self.name) return;
    const reply = await this.#proposeOrForward({ type: 'addClusterNode', ...self });
    if (reply.type === 'error') throw new ClusterJoinError(reply.text);
  }

  /**
   * A fresh node's join: ask each given member in turn until one answers (the cluster may still be
   * starting), then wait until this replica is a member of the metadata group and has caught up.
   */
  async #join(): Promise<void> {
    const started = Date.now();
    const { version, flags } = this.featureFlags.build;
    const request = encodeJson({ ...this.#selfRecord(), version, flags: [...flags] } satisfies JoinRequest);
    let attempt = 0;
    let lastError: unknown;
    for (;;) {
      for (const address of this.#joinSeeds) {
        attempt++;
        try {
          const { peerId, response } = await this.#rpc.callAddress(address, RPC_JOIN, request);
          const answer = decodeJson<JoinResponse>(response);
          for (const member of answer.members) {
            if (member.id !== this.nodeId) this.#addPeer(member.id, member.address);
          }
          this.#gater.setMembers([this.nodeId, peerId, ...answer.members.map((m) => m.peerId)]);
          this.#log.info(
            { via: address, members: answer.members.length, leader: answer.leader },
            'joined the cluster; catching up with its metadata',
          );
          await this.#catchUp();
          return;
        } catch (error) {
          if (error instanceof RpcRemoteError && error.code !== 'UNAVAILABLE') {
            // The cluster refused this node (forgotten, or its name taken by another node).
            throw new ClusterJoinError(`the cluster at ${address} refused this node: ${error.message}`);
          }
          lastError = error;
          this.#log.info({ address, attempt, err: error }, 'join attempt failed; retrying');
        }
      }
      if (Date.now() - started > JOIN_DEADLINE_MS) {
        throw new ClusterJoinError(
          `could not join through ${this.#joinSeeds.join(', ')} within ${JOIN_DEADLINE_MS / 1000} s: ${String(lastError)}`,
        );
      }
      await sleep(JOIN_RETRY_MS);
    }
  }

  /**
   * DNS discovery with an empty data dir: look the nodes up and probe them until seed-formation.ts's
   * rule says join (through the members found) or form. A failed lookup, a node that does not
   * answer, a rule that says wait: logged and retried after a pause (DISCOVERY_RETRY_MIN_MS doubling
   * to DISCOVERY_RETRY_MAX_MS), never fatal: the node waits as long as DNS and its peers need.
   * `--join`'s addresses, if any, count as listed too.
   */
  async #discoverSeeds(discovery: NonNullable<ClusterStartOptions['discovery']>): Promise<void> {
    const ownPort = Number(/:(\d+)$/.exec(this.address)?.[1]);
    const ownHosts = new Set([...localInterfaceAddresses(), this.address.replace(/^\[?(.*?)\]?:\d+$/, '$1')]);
    let delay = DISCOVERY_RETRY_MIN_MS;
    let previous = '';
    let said = '';
    for (;;) {
      let listed: string[] | undefined;
      try {
        const found = await discovery.lookup();
        listed = [...new Set([...found.addresses, ...this.#options.join])].sort();
        if (found.problems.length > 0) {
          this.#log.warn(
            { dns: discovery.description, problems: found.problems },
            'DNS discovery: some hosts did not resolve',
          );
        }
      } catch (error) {
        const text = error instanceof Error ? error.message : String(error);
        this.#log.warn(
          { dns: discovery.description, retryInMs: delay },
          `DNS discovery failed: ${text}; retrying`,
        );
      }
      if (listed !== undefined) {
        if (listed.join() !== previous) delay = DISCOVERY_RETRY_MIN_MS;
        previous = listed.join();
        const self = listed.find((address) => isOwnAddress(address, ownPort, ownHosts));
        const others = listed.filter((address) => address !== self);
        const answers = new Map(
          await Promise.all(
            others.map(async (address) => [address, await this.#probeSeed(address)] as const),
          ),
        );
        const decision = decideSeeds(listed, self, answers);
        const fields = {
          dns: discovery.description,
          listed,
          self: self ?? null,
          answers: Object.fromEntries(answers),
        };
        if (decision.action === 'join') {
          this.#joining = true;
          this.#joinSeeds = [...decision.through, ...others.filter((a) => !decision.through.includes(a))];
          this.#log.info(fields, `DNS discovery: joining the cluster through ${decision.through.join(', ')}`);
          return;
        }
        if (decision.action === 'form') {
          this.#joining = false;
          this.#log.info(
            fields,
            'DNS discovery: every listed node is fresh and this one sorts first: forming the cluster',
          );
          return;
        }
        // The same reason again is logged at debug: a node may wait long for its peers.
        if (decision.reason !== said)
          this.#log.info({ ...fields, retryInMs: delay }, `DNS discovery: waiting: ${decision.reason}`);
        else this.#log.debug({ ...fields, retryInMs: delay }, `DNS discovery: waiting: ${decision.reason}`);
        said = decision.reason;
      }
      await sleep(delay);
      delay = Math.min(delay * 2, DISCOVERY_RETRY_MAX_MS);
    }
  }

  /** Discovery's question to a listed node: is it a cluster member already? */
  async #probeSeed(address: string): Promise<SeedAnswer> {
    const request = encodeJson({ ...this.#selfRecord(), probe: true } satisfies JoinRequest);
    try {
      const { response } = await this.#rpc.callAddress(address, RPC_JOIN, request, PROBE_TIMEOUT_MS);
      const answer = decodeJson<Partial<ProbeResponse & JoinResponse>>(response);
      // A build from before discovery answers with a join's response: it is a member.
      return answer.clustered === false ? 'not-clustered' : 'clustered';
    } catch (error) {
      // A refusal other than "not yet" comes from a member: the join reports it.
      if (error instanceof RpcRemoteError && error.code !== 'UNAVAILABLE') return 'clustered';
      this.#log.debug({ address, err: error }, 'DNS discovery: no answer to the probe');
      return 'no-answer';
    }
  }

  /** Wait until the leader has added this replica and it has applied the metadata as of now. */
  async #catchUp(): Promise<void> {
    const group = this.#group as MetadataGroup;
    const started = Date.now();
    for (;;) {
      try {
        await group.log.barrier(CATCH_UP_BARRIER_MS);
        if (group.state.clusterNode(this.nodeId) !== undefined) return;
      } catch (error) {
        if (Date.now() - started > JOIN_DEADLINE_MS) {
          throw new ClusterJoinError(`joined, but did not catch up with the metadata: ${String(error)}`);
        }
      }
      await sleep(FORWARD_RETRY_MS);
    }
  }

  /** Propose on this replica when it leads the metadata group, else forward to the leader. */
  async #proposeOrForward(command: MetadataCommand): Promise<MetadataReply> {
    const group = this.#group as MetadataGroup;
    try {
      return await group.log.propose(command);
    } catch (error) {
      if (!(error instanceof NotLeaderError)) throw error;
      return this.forward(command, error.leader);
    }
  }

  /**
   * Call `kind` on the metadata leader, following redirects while no leader is known or the one
   * known has just lost its lead. Only answers that prove nothing was committed are retried.
   */
  async #callLeader(
    kind: string,
    payload: Uint8Array,
    hint: string | undefined,
    locally?: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    const deadline = Date.now() + FORWARD_DEADLINE_MS;
    let leader = hint;
    for (;;) {
      leader ??= this.#group?.log.leader;
      if (leader === this.nodeId && locally !== undefined) {
        // Elected meanwhile: the change goes through here.
        try {
          return await locally();
        } catch (error) {
          if (!(error instanceof NotLeaderError)) throw error;
          leader = undefined;
        }
      } else if (leader !== undefined && this.#countedDown(leader)) {
        // It stopped answering pings: wait for the group to elect another rather than time out on it.
        leader = undefined;
      } else if (leader !== undefined && leader !== this.nodeId) {
        try {
          this.#log.debug({ leader, kind }, 'calling the metadata leader');
          return await this.#rpc.call(leader, kind, payload, FORWARD_ATTEMPT_MS);
        } catch (error) {
          const retry =
            (error instanceof RpcRemoteError &&
              (error.code === 'NOT_LEADER' || error.code === 'UNAVAILABLE')) ||
            error instanceof PeerUnreachableError;
          if (!retry) throw error;
          this.#log.debug({ leader, kind, err: error }, 'metadata leader not reached; looking again');
          // Ask our replica again: it learns the new leader from the group's own messages.
          leader = undefined;
        }
      } else {
        leader = undefined;
      }
      if (Date.now() > deadline) {
        throw new ConnectionError(
          Code.INTERNAL_ERROR,
          `metadata store unavailable: no reachable leader within ${FORWARD_DEADLINE_MS / 1000} s`,
        );
      }
      await sleep(FORWARD_RETRY_MS);
    }
  }

  /** Leader only: a command forwarded by another node. */
  async #onMetadata(payload: Uint8Array): Promise<Uint8Array> {
    const group = this.#leadingGroup();
    const command = metadataCommandCodec.decode(payload);
    const reply = await this.#asLeader(() => group.log.propose(command));
    return encodeJson(reply);
  }

  /** Any member: a node asks to join; the leader records it (forwarded there when elsewhere). */
  async #onJoin(payload: Uint8Array, from: string): Promise<Uint8Array> {
    const request = decodeJson<JoinRequest>(payload);
    // A node asks for itself; a member relays a join it received (and checked) to the leader.
    if ((request.peerId !== from || request.id !== from) && !this.#gater.isMember(from)) {
      throw new RpcError('FORBIDDEN', 'a node may only ask to join as itself');
    }
    const group = this.#group;
    if (request.probe === true) {
      const clustered = group?.state.clusterNode(this.nodeId) !== undefined;
      return encodeJson({ clustered } satisfies ProbeResponse);
    }
    // Still discovering, or its broker still starting: the joiner retries.
    if (group === undefined) throw new RpcError('UNAVAILABLE', 'this node is not in a cluster yet');
    if (group.log.leader !== this.nodeId) {
      return this.#callLeaderRaw(RPC_JOIN, payload, () => this.#onJoin(payload, from));
    }
    const refusal = this.featureFlags.joinRefusal(request);
    if (refusal !== undefined) {
      this.#log.warn({ node: request.name, id: request.id }, `join refused: ${refusal}`);
      throw new RpcError(
        String(ReplyCode.PRECONDITION_FAILED),
        `node '${request.name}' cannot join: ${refusal}`,
      );
    }
    const reply = await this.#asLeader(() => group.log.propose({ type: 'addClusterNode', ...request }));
    if (reply.type === 'error') throw new RpcError(String(reply.code), reply.text);
    this.#log.info(
      { node: request.name, id: request.id, address: request.address },
      'node joined the cluster',
    );
    this.#reconciler?.poke();
    const response: JoinResponse = { members: group.state.clusterNodes(), leader: this.nodeId };
    return encodeJson(response);
  }

  /** Pass a join on to the leader (the joiner only knows the addresses it was given). */
  async #callLeaderRaw(
    kind: string,
    payload: Uint8Array,
    locally: () => Promise<Uint8Array>,
  ): Promise<Uint8Array> {
    try {
      return await this.#callLeader(kind, payload, undefined, locally);
    } catch (error) {
      if (error instanceof RpcRemoteError) throw new RpcError(error.code, error.message);
      throw new RpcError('UNAVAILABLE', error instanceof Error ? error.message : String(error));
    }
  }

  /** Leader only: forget a member. */
  async #onForget(payload: Uint8Array): Promise<Uint8Array> {
    const group = this.#leadingGroup();
    const { node } = decodeJson<{ node: string }>(payload);
    const reply = await this.#asLeader(() => group.log.propose({ type: 'forgetClusterNode', node }));
    if (reply.type === 'error') throw new RpcError(String(reply.code), reply.text);
    this.#reconciler?.poke();
    return encodeJson(reply);
  }

  #leadingGroup(): MetadataGroup {
    const group = this.#group;
    if (group === undefined) throw new RpcError('UNAVAILABLE', 'this node is still starting');
    if (group.log.leader !== this.nodeId) {
      throw new RpcError('NOT_LEADER', 'not the metadata leader');
    }
    return group;
  }

  /** Run a proposal on the leader, turning a lost lead into the answer callers retry on. */
  async #asLeader(propose: () => Promise<MetadataReply>): Promise<MetadataReply> {
    try {
      return await propose();
    } catch (error) {
      if (error instanceof NotLeaderError) throw new RpcError('NOT_LEADER', error.message);
      throw error;
    }
  }
}
