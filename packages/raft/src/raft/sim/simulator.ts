import type { ConfChangeSingle, ConfChangeV2, MembershipConfig } from '../conf-change.ts';
import { ConfChangeTransition, ConfChangeType, isJoint, memberIds } from '../conf-change.ts';
import { ProposalDroppedError } from '../errors.ts';
import { MemoryRaftStorage } from '../memory-raft-storage.ts';
import { decodeMessage, encodeMessage } from '../message-codec.ts';
import type { Mutations } from '../mutations.ts';
import { NO_MUTATIONS } from '../mutations.ts';
import type { ConfState, Message, NodeId } from '../types.ts';
import { EntryType, MessageType, RaftRole } from '../types.ts';
import { Checker } from './checker.ts';
import { EventQueue } from './event-queue.ts';
import { encodeKvCommand } from './kv-machine.ts';
import type { RegisterOp } from './linearizability.ts';
import { checkRegister } from './linearizability.ts';
import { PartitionKind, SimNetwork } from './network.ts';
import type { NemesisWeights, SwarmParams } from './options.ts';
import { drawSwarm } from './options.ts';
import { Prng } from './prng.ts';
import type { InFlightWrite, NodeContext } from './sim-node.ts';
import { SimNode } from './sim-node.ts';

export interface SimulationOptions {
  readonly seed: number;
  /** Events to run in the fault phase (a step = one delivered event: message, tick, fsync, fault, op). */
  readonly steps: number;
  /** TEST ONLY: classic bugs to re-enable in every replica. */
  readonly mutations?: Mutations;
  /** Adjust the parameters drawn from the seed (tests and scenarios). */
  readonly params?: (drawn: SwarmParams) => SwarmParams;
  /** Keep the last N events as text for the failure report (0 = none, the fast default). */
  readonly traceLast?: number;
  /** Bound on the liveness phase after healing, in ms of simulated time (default from the timeouts). */
  readonly livenessBoundMs?: number;
  /**
   * Tell replicas that a peer is unreachable, as a node's transport does (default true): most
   * survivors of a crash hear it within a few ms, and now and then a live replica is reported down
   * to one that can still reach it (a false suspicion). Off replays histories recorded before the
   * notices existed (the sweep regressions).
   */
  readonly peerDownNotices?: boolean;
}

/** Totals of one run; the CLI adds them up over seeds. */
export interface SimStats {
  steps: number;
  livenessSteps: number;
  simTimeMs: number;
  elections: number;
  crashes: number;
  partitions: number;
  clogs: number;
  pauses: number;
  snapshotsInstalled: number;
  snapshotsTaken: number;
  /** Readys handed to a disk while an earlier one was still syncing (pipelined storage writes). */
  pipelinedWrites: number;
  /** Writes in flight at a crash that the disk had written anyway (a kept prefix). */
  crashKeptWrites: number;
  /** Messages folded into an append before them (`SwarmParams.foldAppends`), not sent on their own. */
  foldedMessages: number;
  membershipChanges: number;
  transfers: number;
  /** Peer-down notices a replica acted on (its leader forgotten; see `peerDownNotices`). */
  leadersForgotten: number;
  commits: number;
  writes: number;
  reads: number;
  unknownWrites: number;
  messages: number;
  linearizabilityGaveUp: number;
}

export interface SimResult {
  readonly seed: number;
  readonly violations: readonly string[];
  readonly stats: SimStats;
  /** A hash of every event handled: two runs of one seed must have the same. */
  readonly traceHash: number;
  readonly trace: readonly string[];
  readonly params: SwarmParams;
}

export function emptyStats(): SimStats {
  return {
    steps: 0,
    livenessSteps: 0,
    simTimeMs: 0,
    elections: 0,
    crashes: 0,
    partitions: 0,
    clogs: 0,
    pauses: 0,
    snapshotsInstalled: 0,
    snapshotsTaken: 0,
    pipelinedWrites: 0,
    crashKeptWrites: 0,
    foldedMessages: 0,
    membershipChanges: 0,
    transfers: 0,
    leadersForgotten: 0,
    commits: 0,
    writes: 0,
    reads: 0,
    unknownWrites: 0,
    messages: 0,
    linearizabilityGaveUp: 0,
  };
}

type SimEvent =
  | { readonly kind: 'deliver'; readonly from: NodeId; readonly to: NodeId; readonly bytes: Uint8Array }
  | { readonly kind: 'tick'; readonly node: SimNode; readonly gen: number }
  | {
      readonly kind: 'sync';
      readonly node: SimNode;
      readonly incarnation: number;
      readonly write: InFlightWrite;
    }
  | { readonly kind: 'nemesis' }
  | { readonly kind: 'restart'; readonly node: SimNode }
  | { readonly kind: 'resume'; readonly node: SimNode; readonly gen: number }
  | { readonly kind: 'heal'; readonly partition: number }
  | { readonly kind: 'client'; readonly client: Client }
  | { readonly kind: 'timeout'; readonly client: Client; readonly opId: number }
  | { readonly kind: 'retire'; readonly node: SimNode }
  | { readonly kind: 'probe' }
  | { readonly kind: 'peerDown'; readonly node: SimNode; readonly peer: NodeId };

const EVENT_CODES: Record<SimEvent['kind'], number> = {
  deliver: 1,
  tick: 2,
  sync: 3,
  nemesis: 4,
  restart: 5,
  resume: 6,
  heal: 7,
  client: 8,
  timeout: 9,
  retire: 10,
  probe: 11,
  peerDown: 12,
};

interface ClientOp {
  readonly opId: number;
  readonly kind: 'write' | 'read';
  readonly key: number;
  readonly value: number;
  readonly callTime: number;
}

interface Client {
  readonly id: number;
  op: ClientOp | undefined;
  leaderHint: NodeId | undefined;
}

interface HistoryOp {
  readonly kind: 'write' | 'read';
  readonly key: number;
  readonly value: number;
  readonly opId: number;
  readonly callTime: number;
  /** +Infinity while unknown (a write whose client timed out). */
  readonly returnTime: number;
}

/** Bound on events deferred for one paused replica (its socket buffer); more are dropped. */
const MAX_DEFERRED_EVENTS = 4096;

function confStateOf(voters: readonly NodeId[]): ConfState {
  return { voters: [...voters].sort(), votersOutgoing: [], learners: [], learnersNext: [], autoLeave: false };
}

/**
 * A deterministic simulation of one Raft group and its clients (engineering.md §2.8): one seed
 * drives the network (delay, loss, duplication, reordering, partitions of every shape, clogged
 * links), the disks (fsync latency; a crash loses everything unsynced), the processes (crash,
 * restart from disk, pause/resume, clock skew), the operator (membership changes, leadership
 * transfers, snapshots at random points) and the clients (linearizable reads and writes on a few
 * keys). The checker runs after every event; after the fault phase everything is healed and a
 * leader must be elected and commit a probe within a bound; last, the client history must be
 * linearizable per key. Single-threaded, no real time or I/O: a seed replays bit for bit.
 */
export class Simulation {
  readonly #options: SimulationOptions;
  readonly params: SwarmParams;
  readonly #prng: Prng;
  readonly #queue = new EventQueue<SimEvent>();
  readonly checker = new Checker(1);
  readonly nodes = new Map<NodeId, SimNode>();
  readonly #network: SimNetwork;
  readonly stats = emptyStats();
  readonly #clients: Client[] = [];
  readonly #clientOfOp = new Map<number, Client>();
  readonly #history: HistoryOp[] = [];
  readonly #trace: string[] = [];
  #now = 0;
  #logical = 0;
  #traceHash = 0x811c9dc5;
  #nextNodeId = 1;
  #nextOpId = 0;
  #nextConfChange = 0;
  #partitionId = 0;
  /** What the last nemesis event did, for the trace (empty when it did nothing). */
  #lastNemesis = '';
  #faultPhase = true;
  #probeOps: number[] = [];
  #probeCommitted = false;
  readonly #nodeCreatedAt = new Map<NodeId, number>();
  readonly #deferred = new Map<SimNode, SimEvent[]>();
  readonly #ctx: NodeContext;

  constructor(options: SimulationOptions) {
    this.#options = options;
    this.#prng = new Prng(options.seed);
    const drawn = drawSwarm(this.#prng.fork());
    this.params = options.params ? options.params(drawn) : drawn;
    this.#network = new SimNetwork(this.#prng.fork(), { ...this.params.network }, (at, from, to, bytes) =>
      this.#queue.push(at, { kind: 'deliver', from, to, bytes }),
    );
    const sim = this;
    this.#ctx = {
      checker: this.checker,
      now: () => this.#now,
      stamp: () => ++this.#logical,
      send: (from, m) => this.#send(from, m),
      scheduleSync: (node, delay, write) =>
        this.#queue.push(this.#now + delay, { kind: 'sync', node, incarnation: node.incarnation, write }),
      onWriteApplied: (_node, opId) => this.#completeWrite(opId),
      onReadServed: (_node, context, value) => this.#completeRead(context, value),
      onConfChangeApplied: (node, before, after) => this.#onConfChangeApplied(node, before, after),
      nodeById: (id) => this.nodes.get(id),
      get stats() {
        return sim.stats;
      },
    };
  }

  /** Run the fault phase, the liveness phase and the final checks. */
  run(): SimResult {
    this.#bootstrap();
    try {
      this.#runFaultPhase();
      if (this.checker.violations.length === 0) this.#runLivenessPhase();
    } catch (error) {
      this.checker.fail(`exception at step ${this.stats.steps}: ${errorText(error)}`);
    }
    if (this.checker.violations.length === 0) this.#checkLinearizability();
    if (this.checker.violations.length > 0 && (this.#options.traceLast ?? 0) > 0) {
      this.#trace.push(...this.#clusterState());
    }
    this.stats.simTimeMs = Math.round(this.#now);
    this.stats.elections = this.checker.leaders.size;
    this.stats.commits = this.checker.canonicalLength - 1;
    let membershipChanges = 0;
    for (let index = 2; index <= this.checker.canonicalLength; index++) {
      if (this.checker.canonical(index)?.type === EntryType.ConfChange) membershipChanges++;
    }
    this.stats.membershipChanges = membershipChanges;
    this.stats.messages = this.#network.sent;
    return {
      seed: this.#options.seed,
      violations: this.checker.violations,
      stats: this.stats,
      traceHash: this.#traceHash >>> 0,
      trace: this.#trace,
      params: this.params,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Setup and phases

  #bootstrap(): void {
    const ids: NodeId[] = [];
    for (let i = 0; i < this.params.voters; i++) ids.push(this.#newNodeId());
    const confState = confStateOf(ids);
    for (const id of ids) {
      const node = this.#createNode(id, MemoryRaftStorage.bootstrap(confState));
      this.#startNode(node, this.#prng.nextFloat() * this.params.tickMs);
    }
    for (let i = 0; i < this.params.clients; i++) {
      const client: Client = { id: i, op: undefined, leaderHint: undefined };
      this.#clients.push(client);
      this.#queue.push(this.#prng.exponential(this.params.thinkMeanMs * 4), { kind: 'client', client });
    }
    this.#scheduleNemesis();
  }

  #runFaultPhase(): void {
    const limit = this.#options.steps;
    while (this.stats.steps < limit && this.checker.violations.length === 0) {
      const next = this.#queue.pop();
      if (next === undefined) break;
      this.#now = next.time;
      if (this.#handle(next.item)) this.stats.steps++;
    }
  }

  #runLivenessPhase(): void {
    this.#faultPhase = false;
    this.#network.heal();
    this.#network.unclogAll();
    this.#network.faults.dropRate = 0;
    this.#network.faults.duplicateRate = 0;
    for (const node of this.nodes.values()) {
      if (node.retired) continue;
      if (!node.up) this.#startNode(node, 0);
      else if (node.paused) this.#resume(node);
    }
    const p = this.params;
    const electionMs = (p.raft.electionTicks ?? 10) * p.tickMs * (1 + p.skew);
    const bound = this.#options.livenessBoundMs ?? 60 * electionMs + 2000;
    const deadline = this.#now + bound;
    this.#queue.push(this.#now, { kind: 'probe' });
    while (!this.#probeCommitted && this.checker.violations.length === 0) {
      const next = this.#queue.pop();
      if (next === undefined || next.time > deadline) break;
      this.#now = next.time;
      if (this.#handle(next.item)) this.stats.livenessSteps++;
    }
    if (!this.#probeCommitted && this.checker.violations.length === 0) {
      const leaders = [...this.nodes.values()]
        .filter((n) => n.up && n.core.role === RaftRole.Leader)
        .map((n) => `${n.id}@${n.core.term}`);
      this.checker.fail(
        `liveness: no proposal committed within ${Math.round(bound)} ms after healing ` +
          `(leaders: ${leaders.join(', ') || 'none'})`,
      );
      return;
    }
    if (this.checker.violations.length === 0) this.#runConvergence(bound);
  }

  /**
   * After the probe committed: every member of the configuration catches up to the canonical log
   * within the bound, and replicas that applied the same prefix hold the same state.
   */
  #runConvergence(bound: number): void {
    const target = this.checker.canonicalLength;
    const deadline = this.#now + bound;
    const laggards = (): SimNode[] => {
      const leader = this.#leader();
      if (leader === undefined) return [...this.nodes.values()];
      const out: SimNode[] = [];
      for (const id of memberIds(leader.core.membership())) {
        const node = this.nodes.get(id);
        if (node?.up && !node.retired && node.kv.appliedIndex < target) out.push(node);
      }
      return out;
    };
    while (this.checker.violations.length === 0 && laggards().length > 0) {
      const next = this.#queue.pop();
      if (next === undefined || next.time > deadline) break;
      this.#now = next.time;
      if (this.#handle(next.item)) this.stats.livenessSteps++;
    }
    if (this.checker.violations.length > 0) return;
    const behind = laggards();
    if (behind.length > 0) {
      this.checker.fail(
        `convergence: ${behind.map((n) => `${n.id}@${n.kv.appliedIndex}`).join(', ')} did not apply ` +
          `up to ${target} within ${Math.round(bound)} ms after healing`,
      );
      return;
    }
    const stateAt = new Map<number, number>();
    for (const node of this.nodes.values()) {
      if (!node.up || node.retired) continue;
      const hash = node.kv.stateHash();
      const expected = stateAt.get(node.kv.appliedIndex);
      if (expected === undefined) stateAt.set(node.kv.appliedIndex, hash);
      else if (expected !== hash)
        this.checker.fail(`convergence: ${node.id} holds a different state at ${node.kv.appliedIndex}`);
    }
  }

  #checkLinearizability(): void {
    // Writes still in flight when the run ends have an unknown outcome, like timed-out ones.
    for (const client of this.#clients) {
      const op = client.op;
      if (op?.kind === 'write') this.#finishOp(client, op, op.value, Number.POSITIVE_INFINITY);
    }
    const byKey = new Map<number, RegisterOp[]>();
    for (const op of this.#history) {
      let returnTime = op.returnTime;
      if (op.kind === 'write' && returnTime === Number.POSITIVE_INFINITY) {
        this.stats.unknownWrites++;
        // The simulator knows what a real client cannot: whether the write ever took effect.
        if (this.checker.committedIndexOf(op.opId) === undefined) continue;
        returnTime = this.checker.firstApplied.get(op.opId) ?? Number.POSITIVE_INFINITY;
      }
      let ops = byKey.get(op.key);
      if (ops === undefined) {
        ops = [];
        byKey.set(op.key, ops);
      }
      ops.push({ kind: op.kind, value: op.value, callTime: op.callTime, returnTime, id: op.opId });
    }
    for (const [key, ops] of byKey) {
      const result = checkRegister(ops);
      if (result.gaveUp) this.stats.linearizabilityGaveUp++;
      if (!result.ok) {
        const reads = ops.filter((op) => op.kind === 'read').length;
        this.checker.fail(
          `linearizability: the history of key ${key} (${ops.length} ops, ${reads} reads) is not linearizable`,
        );
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Events

  #handle(event: SimEvent): boolean {
    const handled = this.#handleEvent(event);
    if (handled && (this.#options.traceLast ?? 0) > 0) this.#annotate(event);
    return handled;
  }

  /**
   * Finish the trace line of an event just handled: the state of the replica it touched, as it is
   * after the event (for a nemesis, what it did). A failing seed is read from these lines.
   */
  #annotate(event: SimEvent): void {
    const line = this.#trace.length - 1;
    if (line < 0) return;
    let node: SimNode | undefined;
    if (event.kind === 'deliver') node = this.nodes.get(event.to);
    else if ('node' in event) node = event.node;
    if (node !== undefined) this.#trace[line] += ` | ${nodeState(node)}`;
    else if (event.kind === 'nemesis' && this.#lastNemesis !== '') this.#trace[line] += this.#lastNemesis;
  }

  /** One line per replica: what the trace of a failing seed ends with. */
  #clusterState(): string[] {
    const lines: string[] = [];
    for (const node of this.nodes.values()) lines.push(`state ${nodeState(node)}`);
    return lines;
  }

  #handleEvent(event: SimEvent): boolean {
    switch (event.kind) {
      case 'deliver':
        return this.#deliver(event);
      case 'tick': {
        const node = event.node;
        if (event.gen !== node.tickGen || !node.up || node.paused) return false;
        this.#record(event, node.id);
        node.core.tick();
        node.pump();
        this.checker.observe(node);
        this.#scheduleTick(node, this.params.tickMs * node.skew);
        return true;
      }
      case 'sync': {
        const node = event.node;
        if (event.incarnation !== node.incarnation || !node.up) return false;
        if (node.paused) return this.#defer(node, event);
        this.#record(event, node.id);
        node.completeSync(event.write);
        this.checker.observe(node);
        return true;
      }
      case 'nemesis':
        if (!this.#faultPhase) return false;
        this.#record(event, '');
        this.#nemesis();
        if (this.#options.peerDownNotices !== false && this.#prng.chance(0.2)) this.#nemesisSuspect();
        this.#scheduleNemesis();
        return true;
      case 'restart': {
        const node = event.node;
        if (node.up || node.retired) return false;
        this.#record(event, node.id);
        this.#startNode(node, 0);
        return true;
      }
      case 'resume': {
        const node = event.node;
        if (!node.paused || event.gen !== node.tickGen) return false;
        this.#record(event, node.id);
        this.#resume(node);
        return true;
      }
      case 'heal':
        if (event.partition !== this.#partitionId || this.#network.partition === undefined) return false;
        this.#record(event, '');
        this.#network.heal();
        return true;
      case 'client':
        this.#record(event, String(event.client.id));
        this.#clientOp(event.client);
        return true;
      case 'timeout':
        return this.#clientTimeout(event.client, event.opId);
      case 'retire': {
        const node = event.node;
        if (node.retired) return false;
        this.#record(event, node.id);
        node.retired = true;
        if (node.up) node.crash();
        return true;
      }
      case 'probe':
        this.#record(event, '');
        this.#probe();
        return true;
      case 'peerDown': {
        const node = event.node;
        if (!node.up) return false;
        if (node.paused) return this.#defer(node, event);
        this.#record(event, node.id);
        if (node.core.forgetLeader(event.peer)) this.stats.leadersForgotten++;
        node.pump();
        this.checker.observe(node);
        return true;
      }
    }
  }

  #deliver(event: SimEvent & { kind: 'deliver' }): boolean {
    const node = this.nodes.get(event.to);
    if (node === undefined || !node.up) return false;
    if (this.#network.isBlocked(event.from, event.to)) return false;
    if (node.paused) return this.#defer(node, event);
    this.#record(event, event.to);
    const m = decodeMessage(event.bytes);
    node.core.step(m);
    node.pump();
    this.checker.observe(node);
    return true;
  }

  #defer(node: SimNode, event: SimEvent): boolean {
    let list = this.#deferred.get(node);
    if (list === undefined) {
      list = [];
      this.#deferred.set(node, list);
    }
    if (list.length < MAX_DEFERRED_EVENTS) list.push(event);
    return false;
  }

  #record(event: SimEvent, node: string): void {
    let h = this.#traceHash;
    h = Math.imul(h ^ EVENT_CODES[event.kind], 16777619);
    h = Math.imul(h ^ Math.round(this.#now * 1000), 16777619);
    for (let i = 0; i < node.length; i++) h = Math.imul(h ^ node.charCodeAt(i), 16777619);
    this.#traceHash = h;
    const keep = this.#options.traceLast ?? 0;
    if (keep > 0) {
      let text = `${this.#now.toFixed(3)} ${event.kind}${node === '' ? '' : ` ${node}`}`;
      if (event.kind === 'deliver') {
        const m = decodeMessage(event.bytes);
        text += ` ${describe(m)}`;
      }
      this.#trace.push(text);
      if (this.#trace.length > keep) this.#trace.shift();
    }
  }

  #send(from: SimNode, m: Message): void {
    this.#network.send(this.#now, from.id, m.to, encodeMessage(m));
  }

  // ---------------------------------------------------------------------------------------------
  // Replicas

  #newNodeId(): NodeId {
    return `n${this.#nextNodeId++}`;
  }

  #createNode(id: NodeId, storage: MemoryRaftStorage | undefined): SimNode {
    const node = new SimNode(
      id,
      storage,
      this.#ctx,
      {
        raft: this.params.raft,
        mutations: this.#options.mutations ?? NO_MUTATIONS,
        fsyncMinMs: this.params.fsyncMinMs,
        fsyncMaxMs: this.params.fsyncMaxMs,
        storageDepth: this.params.storageDepth,
        fsyncLateMs: this.params.fsyncLateMs,
        compactEvery: this.params.compactEvery,
        foldAppends: this.params.foldAppends,
      },
      this.#prng.fork(),
    );
    node.skew = 1 + (this.#prng.nextFloat() * 2 - 1) * this.params.skew;
    this.nodes.set(id, node);
    this.#nodeCreatedAt.set(id, this.#now);
    return node;
  }

  #startNode(node: SimNode, firstTickInMs: number): void {
    node.start();
    this.#deferred.delete(node);
    this.#scheduleTick(node, firstTickInMs);
    node.pump();
    this.checker.observe(node);
  }

  #scheduleTick(node: SimNode, inMs: number): void {
    this.#queue.push(this.#now + inMs, { kind: 'tick', node, gen: node.tickGen });
  }

  #resume(node: SimNode): void {
    node.paused = false;
    node.tickGen++;
    const deferred = this.#deferred.get(node) ?? [];
    this.#deferred.delete(node);
    for (const event of deferred) {
      if (event.kind === 'sync') this.#queue.push(this.#now, { ...event, incarnation: node.incarnation });
      else this.#queue.push(this.#now, event);
    }
    this.#scheduleTick(node, this.params.tickMs * node.skew);
    node.pump();
  }

  #liveNodes(): SimNode[] {
    const out: SimNode[] = [];
    for (const node of this.nodes.values()) if (!node.retired) out.push(node);
    return out;
  }

  #leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const node of this.nodes.values()) {
      if (!node.up || node.paused || node.core.role !== RaftRole.Leader) continue;
      if (best === undefined || node.core.term > best.core.term) best = node;
    }
    return best;
  }

  #onConfChangeApplied(_node: SimNode, before: MembershipConfig, after: MembershipConfig): void {
    const remaining = new Set(memberIds(after));
    for (const id of memberIds(before)) {
      if (remaining.has(id)) continue;
      const removed = this.nodes.get(id);
      if (removed !== undefined && !removed.retired) {
        // The operator decommissions a replica once its removal is committed.
        this.#queue.push(this.#now + this.#prng.between(5, 100), { kind: 'retire', node: removed });
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Nemesis

  #scheduleNemesis(): void {
    this.#queue.push(this.#now + this.#prng.exponential(this.params.nemesisMeanMs), { kind: 'nemesis' });
  }

  #nemesis(): void {
    const w: NemesisWeights = this.params.weights;
    const actions: [keyof NemesisWeights, number][] = Object.entries(w) as [keyof NemesisWeights, number][];
    let total = 0;
    for (const [, weight] of actions) total += weight;
    let roll = this.#prng.nextFloat() * total;
    let chosen: keyof NemesisWeights = 'crash';
    for (const [name, weight] of actions) {
      roll -= weight;
      if (roll < 0) {
        chosen = name;
        break;
      }
    }
    this.#lastNemesis = '';
    switch (chosen) {
      case 'crash':
        this.#nemesisCrash();
        break;
      case 'partition':
        this.#nemesisPartition();
        break;
      case 'clog':
        this.#nemesisClog();
        break;
      case 'pause':
        this.#nemesisPause();
        break;
      case 'membership':
        this.#nemesisMembership();
        break;
      case 'transfer':
        this.#nemesisTransfer();
        break;
      case 'snapshot': {
        const up = this.#liveNodes().filter((n) => n.up && !n.paused);
        if (up.length > 0) {
          const node = this.#prng.pick(up);
          node.compact();
          this.#lastNemesis = ` snapshot ${node.id}`;
        }
        break;
      }
      case 'skew': {
        const node = this.#prng.pick(this.#liveNodes());
        node.skew = 1 + (this.#prng.nextFloat() * 2 - 1) * this.params.skew;
        this.#lastNemesis = ` skew ${node.id} x${node.skew.toFixed(2)}`;
        break;
      }
      case 'network': {
        const faults = this.#network.faults;
        faults.dropRate = this.#prng.pick([0, 0.01, 0.05, 0.2]);
        faults.duplicateRate = this.#prng.pick([0, 0.01, 0.05]);
        faults.delayMeanMs = this.#prng.pick([0.5, 2, 5, 12]);
        this.#lastNemesis =
          ` network drop ${faults.dropRate} duplicate ${faults.duplicateRate}` +
          ` delay ${faults.delayMeanMs} ms`;
        break;
      }
    }
  }

  #nemesisCrash(): void {
    const live = this.#liveNodes();
    const down = live.filter((n) => !n.up).length;
    if (down >= Math.max(1, live.length - 2)) return;
    const up = live.filter((n) => n.up);
    if (up.length === 0) return;
    const leader = this.#leader();
    const node = leader !== undefined && this.#prng.chance(0.4) ? leader : this.#prng.pick(up);
    node.crash();
    this.#deferred.delete(node);
    this.stats.crashes++;
    const downFor = this.#prng.between(5, this.params.crashMaxMs);
    this.#queue.push(this.#now + downFor, { kind: 'restart', node });
    this.#lastNemesis = ` crash ${node.id} for ${downFor.toFixed(0)} ms`;
    if (this.#options.peerDownNotices === false) return;
    // Its connections close: most survivors hear of it within a few ms, some never do.
    for (const other of live) {
      if (other === node || !other.up || !this.#prng.chance(0.8)) continue;
      const at = this.#now + this.#prng.between(0.2, 5);
      this.#queue.push(at, { kind: 'peerDown', node: other, peer: node.id });
    }
  }

  /** A replica hears that a peer is down, often its leader, whether or not it really is. */
  #nemesisSuspect(): void {
    const up = this.#liveNodes().filter((n) => n.up);
    if (up.length < 2) return;
    const node = this.#prng.pick(up);
    const leader = this.#leader();
    const others = this.#liveNodes().filter((n) => n !== node);
    const peer =
      leader !== undefined && leader !== node && this.#prng.chance(0.6) ? leader : this.#prng.pick(others);
    this.#queue.push(this.#now, { kind: 'peerDown', node, peer: peer.id });
    this.#lastNemesis += ` suspect ${peer.id} at ${node.id}`;
  }

  #nemesisPartition(): void {
    if (this.#network.partition !== undefined) return;
    const kinds = Object.values(PartitionKind);
    const kind = this.#prng.pick(kinds);
    const ids = this.#liveNodes().map((n) => n.id);
    const leader = this.#leader();
    const focus = leader !== undefined && this.#prng.chance(0.7) ? leader.id : undefined;
    this.#network.partitionNodes(kind, ids, focus);
    this.stats.partitions++;
    const id = ++this.#partitionId;
    const lasts = this.#prng.between(20, this.params.partitionMaxMs);
    this.#queue.push(this.#now + lasts, { kind: 'heal', partition: id });
    this.#lastNemesis = ` partition ${kind}${focus !== undefined ? ` around ${focus}` : ''} for ${lasts.toFixed(0)} ms`;
  }

  #nemesisClog(): void {
    const ids = this.#liveNodes().map((n) => n.id);
    if (ids.length < 2) return;
    const until = this.#now + this.#prng.between(5, this.params.clogMaxMs);
    const node = this.#prng.pick(ids);
    // Swizzle: clog every link of one node, in both directions, or a single random link.
    if (this.#prng.chance(0.5)) {
      for (const other of ids) {
        if (other === node) continue;
        this.#network.clog(node, other, until);
        this.#network.clog(other, node, until);
      }
      this.#lastNemesis = ` clog ${node} both ways until ${until.toFixed(0)}`;
    } else {
      const other = this.#prng.pick(ids.filter((id) => id !== node));
      this.#network.clog(node, other, until);
      this.#lastNemesis = ` clog ${node}->${other} until ${until.toFixed(0)}`;
    }
    this.stats.clogs++;
  }

  #nemesisPause(): void {
    const candidates = this.#liveNodes().filter((n) => n.up && !n.paused);
    if (candidates.length === 0) return;
    const leader = this.#leader();
    const node = leader !== undefined && this.#prng.chance(0.4) ? leader : this.#prng.pick(candidates);
    node.paused = true;
    node.tickGen++;
    this.stats.pauses++;
    const pausedFor = this.#prng.between(5, this.params.pauseMaxMs);
    this.#queue.push(this.#now + pausedFor, { kind: 'resume', node, gen: node.tickGen });
    this.#lastNemesis = ` pause ${node.id} for ${pausedFor.toFixed(0)} ms`;
  }

  #nemesisTransfer(): void {
    const leader = this.#leader();
    if (leader === undefined) return;
    const voters = leader.core.membership().voters.incoming.filter((id) => id !== leader.id);
    if (voters.length === 0) return;
    const to = this.#prng.pick(voters);
    leader.core.transferLeader(to);
    this.#lastNemesis = ` transfer ${leader.id}->${to}`;
    this.stats.transfers++;
    leader.pump();
    this.checker.observe(leader);
  }

  #nemesisMembership(): void {
    const leader = this.#leader();
    if (leader === undefined) return;
    const config = leader.core.membership();
    const members = new Set(memberIds(config));
    // Retire replicas created for an addition that never made it into the configuration.
    for (const node of this.#liveNodes()) {
      const createdAt = this.#nodeCreatedAt.get(node.id) ?? 0;
      if (!members.has(node.id) && this.#now - createdAt > 2000) {
        this.#queue.push(this.#now, { kind: 'retire', node });
      }
    }
    if (isJoint(config)) {
      if (!config.autoLeave) this.#proposeConfChange(leader, ConfChangeTransition.Auto, []);
      return;
    }
    const voters = config.voters.incoming;
    const learners = config.learners.filter((id) => {
      const node = this.nodes.get(id);
      return node !== undefined && !node.retired;
    });
    const options: (() => void)[] = [];
    const canGrow = this.#liveNodes().length < this.params.maxNodes;
    if (canGrow) {
      options.push(() => {
        const node = this.#createNode(this.#newNodeId(), undefined);
        this.#startNode(node, this.#prng.nextFloat() * this.params.tickMs);
        this.#proposeConfChange(leader, ConfChangeTransition.Auto, [
          { type: ConfChangeType.AddLearner, nodeId: node.id },
        ]);
      });
    }
    if (learners.length > 0) {
      options.push(() =>
        this.#proposeConfChange(leader, ConfChangeTransition.Auto, [
          { type: ConfChangeType.AddVoter, nodeId: this.#prng.pick(learners) },
        ]),
      );
      options.push(() => {
        const transition = this.#prng.pick([
          ConfChangeTransition.Auto,
          ConfChangeTransition.JointImplicit,
          ConfChangeTransition.JointExplicit,
        ]);
        this.#proposeConfChange(leader, transition, [
          { type: ConfChangeType.AddVoter, nodeId: this.#prng.pick(learners) },
          { type: ConfChangeType.RemoveNode, nodeId: this.#prng.pick(voters) },
        ]);
      });
    }
    if (voters.length > 3) {
      options.push(() =>
        this.#proposeConfChange(leader, ConfChangeTransition.Auto, [
          { type: ConfChangeType.RemoveNode, nodeId: this.#prng.pick(voters) },
        ]),
      );
      options.push(() =>
        this.#proposeConfChange(
          leader,
          this.#prng.pick([ConfChangeTransition.Auto, ConfChangeTransition.JointImplicit]),
          [{ type: ConfChangeType.AddLearner, nodeId: this.#prng.pick(voters) }],
        ),
      );
    }
    if (config.learners.length > 0 && !canGrow) {
      options.push(() =>
        this.#proposeConfChange(leader, ConfChangeTransition.Auto, [
          { type: ConfChangeType.RemoveNode, nodeId: this.#prng.pick(config.learners) },
        ]),
      );
    }
    if (options.length > 0) this.#prng.pick(options)();
  }

  #proposeConfChange(
    leader: SimNode,
    transition: ConfChangeV2['transition'],
    changes: ConfChangeSingle[],
  ): void {
    const context = changes.length === 0 ? '' : `cc${++this.#nextConfChange}`;
    const cc: ConfChangeV2 = { transition, changes, context };
    if (context !== '') this.checker.recordConfChangeProposal(context);
    this.#lastNemesis = ` conf change ${transition} [${changes.map((c) => `${c.type} ${c.nodeId}`).join(', ')}] via ${leader.id}`;
    try {
      leader.core.proposeConfChange(cc);
    } catch (error) {
      if (!(error instanceof ProposalDroppedError)) throw error;
    }
    leader.pump();
    this.checker.observe(leader);
  }

  // ---------------------------------------------------------------------------------------------
  // Clients

  #clientOp(client: Client): void {
    if (client.op !== undefined) return;
    const p = this.params;
    let node = client.leaderHint !== undefined ? this.nodes.get(client.leaderHint) : undefined;
    if (node === undefined || !node.up || node.retired || this.#prng.chance(0.1)) {
      const up = this.#liveNodes().filter((n) => n.up);
      if (up.length === 0) {
        this.#scheduleClient(client);
        return;
      }
      node = this.#prng.pick(up);
    }
    const opId = ++this.#nextOpId;
    const key = this.#prng.nextInt(p.keys);
    if (this.#prng.chance(p.readRatio)) {
      const context = `r${opId}`;
      if (node.paused || !node.core.readIndex(context)) {
        client.leaderHint = node.paused ? undefined : node.core.lead;
        this.#scheduleClient(client);
        return;
      }
      node.pendingReads.set(context, { key, index: -1 });
      client.op = { opId, kind: 'read', key, value: 0, callTime: ++this.#logical };
    } else {
      if (node.paused || node.core.role !== RaftRole.Leader) {
        // What a host does before proposing: a follower redirects to the leader it knows.
        client.leaderHint = node.paused ? undefined : node.core.lead;
        this.#scheduleClient(client);
        return;
      }
      const bodyBytes = p.maxBodyBytes > 0 ? this.#prng.nextInt(p.maxBodyBytes + 1) : 0;
      const data = encodeKvCommand({ kind: 'put', opId, key, value: opId, bodyBytes });
      this.checker.recordProposal(opId);
      try {
        node.core.propose(data);
      } catch (error) {
        if (!(error instanceof ProposalDroppedError)) throw error;
        client.leaderHint = error.leader;
        this.#scheduleClient(client);
        return;
      }
      node.pendingWrites.add(opId);
      client.op = { opId, kind: 'write', key, value: opId, callTime: ++this.#logical };
    }
    client.leaderHint = node.id;
    this.#clientOfOp.set(opId, client);
    this.#queue.push(this.#now + p.clientTimeoutMs, { kind: 'timeout', client, opId });
    node.pump();
    this.checker.observe(node);
  }

  #scheduleClient(client: Client): void {
    this.#queue.push(this.#now + 0.5 + this.#prng.exponential(this.params.thinkMeanMs), {
      kind: 'client',
      client,
    });
  }

  #finishOp(client: Client, op: ClientOp, value: number, returnTime: number): void {
    this.#history.push({
      kind: op.kind,
      key: op.key,
      value,
      opId: op.opId,
      callTime: op.callTime,
      returnTime,
    });
    if (op.kind === 'write') this.stats.writes++;
    else this.stats.reads++;
    client.op = undefined;
    this.#clientOfOp.delete(op.opId);
    this.#scheduleClient(client);
  }

  #completeWrite(opId: number): void {
    const client = this.#clientOfOp.get(opId);
    const op = client?.op;
    if (client === undefined || op === undefined || op.opId !== opId) return;
    this.#finishOp(client, op, op.value, ++this.#logical);
  }

  #completeRead(context: string, value: number): void {
    const opId = Number(context.slice(1));
    const client = this.#clientOfOp.get(opId);
    const op = client?.op;
    if (client === undefined || op === undefined || op.opId !== opId) return;
    this.#finishOp(client, op, value, ++this.#logical);
  }

  #clientTimeout(client: Client, opId: number): boolean {
    const op = client.op;
    if (op === undefined || op.opId !== opId) return false;
    this.#record({ kind: 'timeout', client, opId }, String(client.id));
    client.leaderHint = undefined;
    if (op.kind === 'write') {
      // Unknown outcome: it may still commit. Resolved at the end of the run.
      this.#finishOp(client, op, op.value, Number.POSITIVE_INFINITY);
    } else {
      // A read that never returned has no effect on anyone: leave it out.
      client.op = undefined;
      this.#clientOfOp.delete(opId);
      this.#scheduleClient(client);
    }
    return true;
  }

  /** Liveness phase: keep proposing a probe through whoever leads until one commits. */
  #probe(): void {
    for (const opId of this.#probeOps) {
      if (this.checker.committedIndexOf(opId) !== undefined) {
        this.#probeCommitted = true;
        return;
      }
    }
    const leader = this.#leader();
    if (leader !== undefined) {
      const opId = ++this.#nextOpId;
      this.checker.recordProposal(opId);
      try {
        leader.core.propose(encodeKvCommand({ kind: 'probe', opId }));
        this.#probeOps.push(opId);
      } catch (error) {
        if (!(error instanceof ProposalDroppedError)) throw error;
      }
      leader.pump();
      this.checker.observe(leader);
    }
    this.#queue.push(this.#now + this.params.tickMs * 3, { kind: 'probe' });
  }
}

/** Message type names for the trace, by wire number. */
const MESSAGE_NAMES = new Map<number, string>(Object.entries(MessageType).map(([name, n]) => [n, name]));

function describe(m: Message): string {
  const type = MESSAGE_NAMES.get(m.type) ?? `t${m.type}`;
  let text = `${m.from}->${m.to} ${type} term=${m.term} idx=${m.index} lt=${m.logTerm} c=${m.commit}`;
  if (m.entries.length > 0) text += ` ents=${m.entries.length}@${(m.entries[0] as { index: number }).index}`;
  if (m.reject) text += ` reject hint=${m.rejectHint}`;
  if (m.snapshot !== undefined)
    text += ` snap=${m.snapshot.meta.index} chunk=${m.snapshot.chunk}/${m.snapshot.count}`;
  if (m.context !== '') text += ` ctx=${m.context}`;
  return text;
}

/** A replica as a failing seed's reader needs it: role, term, durable/in-memory last index, commit. */
function nodeState(node: SimNode): string {
  if (node.retired) return `${node.id} retired`;
  if (!node.up) return `${node.id} down, durable last ${node.durable.lastIndex()}`;
  const core = node.core;
  return (
    `${node.id} ${core.role}${node.paused ? ' (paused)' : ''} term ${core.term}` +
    `${core.lead !== undefined && core.lead !== node.id ? ` lead ${core.lead}` : ''}` +
    ` last ${node.durable.lastIndex()}/${core.lastIndex} commit ${core.commitIndex} applied ${node.kv.appliedIndex}`
  );
}

function errorText(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Run one seed. */
export function runSimulation(options: SimulationOptions): SimResult {
  return new Simulation(options).run();
}
