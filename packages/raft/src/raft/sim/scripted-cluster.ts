import type { ConfChangeV2 } from '../conf-change.ts';
import { MemoryRaftStorage } from '../memory-raft-storage.ts';
import { decodeMessage, encodeMessage } from '../message-codec.ts';
import type { Mutations } from '../mutations.ts';
import { NO_MUTATIONS } from '../mutations.ts';
import type { RaftCore } from '../raft-core.ts';
import type { Message, NodeId, RaftConfig } from '../types.ts';
import { MessageType, RaftRole } from '../types.ts';
import { Checker } from './checker.ts';
import { encodeKvCommand } from './kv-machine.ts';
import type { RegisterOp } from './linearizability.ts';
import { checkRegister } from './linearizability.ts';
import { Prng } from './prng.ts';
import type { NodeContext } from './sim-node.ts';
import { SimNode } from './sim-node.ts';

export interface ScriptedClusterOptions {
  /** Initial voters. */
  readonly voters: readonly NodeId[];
  readonly raft?: Omit<RaftConfig, 'id' | 'applied'>;
  readonly mutations?: Mutations;
  readonly seed?: number;
  /** Entries applied between automatic snapshots (default: never). */
  readonly compactEvery?: number;
}

/** A message on the scripted network: decoded for inspection, delivered from its bytes. */
export interface InFlight {
  readonly message: Message;
  readonly bytes: Uint8Array;
}

interface ScriptedOp {
  readonly kind: 'write' | 'read';
  readonly key: number;
  value: number;
  readonly opId: number;
  readonly callTime: number;
  returnTime: number;
}

/**
 * A cluster driven step by step by a test, in the style of etcd's interaction tests: nothing
 * happens unless the script says so. Replicas are the simulator's `SimNode`s (same host loop, same
 * checker hooks); the script decides which messages are delivered, dropped or held, when fsyncs
 * complete, when replicas tick, crash and restart. Client reads and writes go into a history that
 * `checkHistory()` verifies for linearizability.
 */
export class ScriptedCluster {
  readonly checker = new Checker(1);
  readonly nodes = new Map<NodeId, SimNode>();
  /** Messages sent and not yet delivered or dropped, in send order. */
  inflight: InFlight[] = [];
  readonly #options: ScriptedClusterOptions;
  readonly #prng: Prng;
  readonly #ctx: NodeContext;
  readonly #heldSyncs = new Set<NodeId>();
  #pendingSyncs: SimNode[] = [];
  #cut = new Set<string>();
  #time = 0;
  #logical = 0;
  #nextOpId = 0;
  #nextConfChange = 0;
  readonly #ops = new Map<number, ScriptedOp>();
  readonly #readContexts = new Map<string, ScriptedOp>();
  readonly stats = {
    snapshotsInstalled: 0,
    snapshotsTaken: 0,
    pipelinedWrites: 0,
    crashKeptWrites: 0,
    foldedMessages: 0,
  };

  constructor(options: ScriptedClusterOptions) {
    this.#options = options;
    this.#prng = new Prng(options.seed ?? 1);
    this.#ctx = {
      checker: this.checker,
      now: () => this.#time,
      stamp: () => ++this.#logical,
      send: (_from, m) => {
        const bytes = encodeMessage(m);
        this.inflight.push({ message: decodeMessage(bytes), bytes });
      },
      scheduleSync: (node) => {
        this.#pendingSyncs.push(node);
      },
      onWriteApplied: (_node, opId) => this.#complete(opId, undefined),
      onReadServed: (_node, context, value) => {
        const op = this.#readContexts.get(context);
        if (op !== undefined) this.#complete(op.opId, value);
      },
      onConfChangeApplied: () => {},
      nodeById: (id) => this.nodes.get(id),
      stats: this.stats,
    };
    const confState = {
      voters: [...options.voters].sort(),
      votersOutgoing: [],
      learners: [],
      learnersNext: [],
      autoLeave: false,
    };
    for (const id of options.voters) this.#add(id, MemoryRaftStorage.bootstrap(confState)).start();
    this.#observeAll();
  }

  #add(id: NodeId, storage: MemoryRaftStorage | undefined): SimNode {
    const node = new SimNode(
      id,
      storage,
      this.#ctx,
      {
        raft: this.#options.raft ?? {},
        mutations: this.#options.mutations ?? NO_MUTATIONS,
        fsyncMinMs: 0,
        fsyncMaxMs: 0,
        storageDepth: 1,
        fsyncLateMs: 0,
        compactEvery: this.#options.compactEvery ?? Number.POSITIVE_INFINITY,
      },
      this.#prng.fork(),
    );
    this.nodes.set(id, node);
    return node;
  }

  /** Start a new, empty replica (to be added by a conf change). */
  addNode(id: NodeId): SimNode {
    const node = this.#add(id, undefined);
    node.start();
    return node;
  }

  node(id: NodeId): SimNode {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`no node ${id}`);
    return node;
  }

  core(id: NodeId): RaftCore {
    return this.node(id).core;
  }

  /** The violations found so far. */
  get violations(): readonly string[] {
    return this.checker.violations;
  }

  #observeAll(): void {
    for (const node of this.nodes.values()) if (node.up) this.checker.observe(node);
  }

  #run(node: SimNode, action: () => void): void {
    if (!node.up) return;
    action();
    node.pump();
    this.checker.observe(node);
  }

  tick(id: NodeId, times = 1): void {
    const node = this.node(id);
    for (let i = 0; i < times; i++) {
      this.#time++;
      this.#run(node, () => node.core.tick());
    }
  }

  /** Tick every live replica `times` times, round-robin. */
  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) for (const node of this.nodes.values()) if (node.up) this.tick(node.id);
  }

  campaign(id: NodeId): void {
    const node = this.node(id);
    this.#run(node, () => node.core.campaign());
  }

  /** Tell `id` that `leader` is unreachable, as its transport would (see `RaftCore.forgetLeader`). */
  forgetLeader(id: NodeId, leader: NodeId): void {
    const node = this.node(id);
    this.#run(node, () => node.core.forgetLeader(leader));
  }

  transferLeader(from: NodeId, to: NodeId): void {
    const node = this.node(from);
    this.#run(node, () => node.core.transferLeader(to));
  }

  proposeConfChange(id: NodeId, cc: Omit<ConfChangeV2, 'context'>): number {
    const node = this.node(id);
    const context = cc.changes.length === 0 ? '' : `cc${++this.#nextConfChange}`;
    if (context !== '') this.checker.recordConfChangeProposal(context);
    let index = 0;
    this.#run(node, () => {
      index = node.core.proposeConfChange({ ...cc, context });
    });
    return index;
  }

  /** A client write of `value` to `key` through `id`; returns the op id. Throws what `propose` throws. */
  put(id: NodeId, key: number, value: number, bodyBytes = 0): number {
    const node = this.node(id);
    const opId = ++this.#nextOpId;
    this.checker.recordProposal(opId);
    const data = encodeKvCommand({ kind: 'put', opId, key, value, bodyBytes });
    this.#run(node, () => {
      node.core.propose(data);
    });
    node.pendingWrites.add(opId);
    this.#ops.set(opId, {
      kind: 'write',
      key,
      value,
      opId,
      callTime: ++this.#logical,
      returnTime: Number.POSITIVE_INFINITY,
    });
    return opId;
  }

  /** A client read of `key` through `id` (ReadIndex). Returns the op id; see `result`. */
  get(id: NodeId, key: number): number {
    const node = this.node(id);
    const opId = ++this.#nextOpId;
    const context = `r${opId}`;
    const op: ScriptedOp = {
      kind: 'read',
      key,
      value: -1,
      opId,
      callTime: ++this.#logical,
      returnTime: Number.POSITIVE_INFINITY,
    };
    this.#ops.set(opId, op);
    this.#readContexts.set(context, op);
    node.pendingReads.set(context, { key, index: -1 });
    this.#run(node, () => {
      node.core.readIndex(context);
    });
    return opId;
  }

  /** The value a read returned, or undefined while it has not returned. */
  result(opId: number): number | undefined {
    const op = this.#ops.get(opId);
    return op === undefined || op.returnTime === Number.POSITIVE_INFINITY ? undefined : op.value;
  }

  /** Whether the op (write) has completed. */
  done(opId: number): boolean {
    return (this.#ops.get(opId)?.returnTime ?? Number.POSITIVE_INFINITY) !== Number.POSITIVE_INFINITY;
  }

  #complete(opId: number, value: number | undefined): void {
    const op = this.#ops.get(opId);
    if (op === undefined || op.returnTime !== Number.POSITIVE_INFINITY) return;
    if (value !== undefined) op.value = value;
    op.returnTime = ++this.#logical;
  }

  /** Check the client history for linearizability; a failure is recorded as a violation. */
  checkHistory(): boolean {
    const byKey = new Map<number, RegisterOp[]>();
    for (const op of this.#ops.values()) {
      let returnTime = op.returnTime;
      if (returnTime === Number.POSITIVE_INFINITY) {
        if (op.kind === 'read') continue;
        if (this.checker.committedIndexOf(op.opId) === undefined) continue;
        returnTime = this.checker.firstApplied.get(op.opId) ?? Number.POSITIVE_INFINITY;
      }
      const list = byKey.get(op.key) ?? [];
      list.push({ kind: op.kind, value: op.value, callTime: op.callTime, returnTime, id: op.opId });
      byKey.set(op.key, list);
    }
    let ok = true;
    for (const [key, ops] of byKey) {
      if (!checkRegister(ops).ok) {
        ok = false;
        this.checker.fail(`linearizability: the history of key ${key} is not linearizable`);
      }
    }
    return ok;
  }

  // ---------------------------------------------------------------------------------------------
  // Network and disks

  /** Block the link from → to (and back, unless `oneWay`). */
  cut(from: NodeId, to: NodeId, oneWay = false): void {
    this.#cut.add(`${from}>${to}`);
    if (!oneWay) this.#cut.add(`${to}>${from}`);
  }

  /** Cut `id` off from every other replica. */
  isolate(id: NodeId): void {
    for (const other of this.nodes.keys()) if (other !== id) this.cut(id, other);
  }

  heal(): void {
    this.#cut.clear();
  }

  /** Withhold `id`'s fsyncs until `releaseSync`. */
  holdSync(id: NodeId): void {
    this.#heldSyncs.add(id);
  }

  releaseSync(id: NodeId): void {
    this.#heldSyncs.delete(id);
  }

  /** Complete every pending fsync not withheld. Returns how many completed. */
  flushSyncs(): number {
    let done = 0;
    while (true) {
      const pending = this.#pendingSyncs;
      this.#pendingSyncs = [];
      let progressed = false;
      for (const node of pending) {
        if (this.#heldSyncs.has(node.id) || !node.up) {
          if (node.up) this.#pendingSyncs.push(node);
          continue;
        }
        node.completeSync();
        this.checker.observe(node);
        done++;
        progressed = true;
      }
      if (!progressed) return done;
    }
  }

  /** Remove and return the in-flight messages matching `filter` (to deliver later, or never). */
  take(filter: (m: Message) => boolean): InFlight[] {
    const taken: InFlight[] = [];
    const kept: InFlight[] = [];
    for (const item of this.inflight) (filter(item.message) ? taken : kept).push(item);
    this.inflight = kept;
    return taken;
  }

  /** Drop the in-flight messages matching `filter`. Returns how many. */
  drop(filter: (m: Message) => boolean): number {
    return this.take(filter).length;
  }

  /** Deliver one message (from `take`, or a copy of one, to replay a duplicate). */
  deliverOne(item: InFlight): void {
    const m = item.message;
    const node = this.nodes.get(m.to);
    if (node === undefined || !node.up || this.#cut.has(`${m.from}>${m.to}`)) return;
    this.#time++;
    this.#run(node, () => node.core.step(decodeMessage(item.bytes)));
  }

  /** Deliver the in-flight messages matching `filter` (all by default), in send order. */
  deliver(filter: (m: Message) => boolean = () => true): number {
    const batch = this.take(filter);
    for (const item of batch) this.deliverOne(item);
    return batch.length;
  }

  /**
   * Deliver messages and complete fsyncs until nothing moves (or `maxRounds`). Messages on cut
   * links are dropped; held fsyncs stay pending.
   */
  stabilize(maxRounds = 200): void {
    for (let round = 0; round < maxRounds; round++) {
      const synced = this.flushSyncs();
      const delivered = this.deliver();
      if (synced === 0 && delivered === 0) return;
    }
  }

  crash(id: NodeId): void {
    const node = this.node(id);
    node.crash();
    this.#pendingSyncs = this.#pendingSyncs.filter((n) => n !== node);
  }

  restart(id: NodeId): void {
    const node = this.node(id);
    node.start();
    node.pump();
    this.checker.observe(node);
  }

  /** The replica leading the highest term, if any. */
  leader(): NodeId | undefined {
    let best: SimNode | undefined;
    for (const node of this.nodes.values()) {
      if (!node.up || node.core.role !== RaftRole.Leader) continue;
      if (best === undefined || node.core.term > best.core.term) best = node;
    }
    return best?.id;
  }

  /**
   * Campaign `id` and deliver only election traffic until it leads (or throw). Whatever else is
   * sent meanwhile (the new leader's first appends) stays in flight for the script to decide.
   */
  winElection(id: NodeId, attempts = 3): void {
    const election = (m: Message): boolean =>
      m.type === MessageType.Vote ||
      m.type === MessageType.VoteResp ||
      m.type === MessageType.PreVote ||
      m.type === MessageType.PreVoteResp;
    // A lost or split election is retried in the next term, as the election timer would.
    for (let attempt = 0; attempt < attempts && this.core(id).role !== RaftRole.Leader; attempt++) {
      this.campaign(id);
      for (let round = 0; round < 50 && this.core(id).role !== RaftRole.Leader; round++) {
        const synced = this.flushSyncs();
        if (this.deliver(election) === 0 && synced === 0) break;
      }
    }
    if (this.core(id).role !== RaftRole.Leader) throw new Error(`${id} did not win the election`);
  }

  /** Campaign `id` and deliver everything until it leads (or throw). */
  elect(id: NodeId): void {
    this.campaign(id);
    this.stabilize();
    if (this.core(id).role !== RaftRole.Leader) throw new Error(`${id} did not win the election`);
  }
}
