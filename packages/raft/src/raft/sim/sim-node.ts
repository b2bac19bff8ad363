import { entryBytes, foldInto } from '../append-merge.ts';
import type { MembershipConfig } from '../conf-change.ts';
import { decodeConfChange } from '../conf-change.ts';
import { MemoryRaftStorage } from '../memory-raft-storage.ts';
import type { Mutations } from '../mutations.ts';
import { RaftCore } from '../raft-core.ts';
import type { ConfState, Message, NodeId, RaftConfig, Ready } from '../types.ts';
import { EntryType } from '../types.ts';
import type { CheckedNode, Checker } from './checker.ts';
import { KvMachine } from './kv-machine.ts';
import type { Prng } from './prng.ts';

/** What a replica host needs from the simulation around it. */
export interface NodeContext {
  readonly checker: Checker;
  /** Simulated time in ms. */
  now(): number;
  /** A strictly increasing logical time for the client history and first-apply times. */
  stamp(): number;
  /** Put a message on the network. */
  send(from: SimNode, m: Message): void;
  /** Complete this node's write `write` `delayMs` from now (its fsync). */
  scheduleSync(node: SimNode, delayMs: number, write: InFlightWrite): void;
  /** A write proposed through this node was applied here. */
  onWriteApplied(node: SimNode, opId: number): void;
  /** A read-index read through this node can be answered with `value`. */
  onReadServed(node: SimNode, context: string, value: number): void;
  /** A conf change was applied here, moving the replica from `before` to `after`. */
  onConfChangeApplied(node: SimNode, before: MembershipConfig, after: MembershipConfig): void;
  /** The replica a message is addressed to, for the checker's acknowledgement bookkeeping. */
  nodeById(id: NodeId): SimNode | undefined;
  readonly stats: {
    snapshotsInstalled: number;
    snapshotsTaken: number;
    pipelinedWrites: number;
    crashKeptWrites: number;
    foldedMessages: number;
  };
}

export interface SimNodeOptions {
  readonly raft: Omit<RaftConfig, 'id' | 'applied'>;
  readonly mutations: Mutations;
  /** fsync latency range in ms. */
  readonly fsyncMinMs: number;
  readonly fsyncMaxMs: number;
  /**
   * Readys in flight to the disk at once (the core's `maxReadiesInFlight`). Above 1 the disk is
   * pipelined: each write's sync completes after its own random latency (so out of step with the
   * others and with message delivery), writes complete in order, and a crash keeps a random prefix
   * of the writes in flight (handed to the disk, maybe written, not known durable) and loses the rest.
   */
  readonly storageDepth: number;
  /** Extra sync latency bound (ms) drawn per write on top of the fsync range when pipelined. */
  readonly fsyncLateMs: number;
  /** Cut a snapshot (and truncate the log) once this many entries were applied since the last one. */
  readonly compactEvery: number;
  /**
   * Send what one pump (or sync completion) releases as the host does with a turn's batch: a
   * follower's appends folded into one, heartbeats behind an append dropped (append-merge.ts).
   */
  readonly foldAppends?: boolean;
}

/** A Ready handed to the disk, waiting for its sync (and for every earlier write's). */
export interface InFlightWrite {
  readonly rd: Ready;
  synced: boolean;
}

interface PendingRead {
  readonly key: number;
  /** The read index once the ReadState arrived; -1 before. */
  index: number;
}

/**
 * One simulated replica: a `RaftCore` driven the way a real host drives it, over a `MemoryRaftStorage`
 * that plays the disk. A Ready's writes land on the disk only when its fsync completes (a later
 * event); a crash before that loses them, together with everything in memory (the core, the
 * machine, pending reads and writes). A restart rebuilds the replica from the disk alone: the core
 * from the stored snapshot, entries and hard state, the machine from the stored snapshot plus the
 * replay of committed entries.
 */
export class SimNode implements CheckedNode {
  readonly id: NodeId;
  readonly durable: MemoryRaftStorage;
  readonly #ctx: NodeContext;
  readonly #options: SimNodeOptions;
  readonly #prng: Prng;
  incarnation = 0;
  core!: RaftCore;
  kv = new KvMachine();
  confState!: ConfState;
  up = false;
  paused = false;
  /** Decommissioned after its removal from the group: never restarted. */
  retired = false;
  /** Tick chain generation: a tick event of another generation is stale. */
  tickGen = 0;
  /** Clock rate: ticks come every tickMs * skew ms of simulated time. */
  skew = 1;
  /** Readys handed to the disk and not completed, oldest first. */
  inFlight: InFlightWrite[] = [];
  readonly pendingWrites = new Set<number>();
  readonly pendingReads = new Map<string, PendingRead>();

  constructor(
    id: NodeId,
    durable: MemoryRaftStorage | undefined,
    ctx: NodeContext,
    options: SimNodeOptions,
    prng: Prng,
  ) {
    this.id = id;
    this.durable = durable ?? new MemoryRaftStorage();
    this.#ctx = ctx;
    this.#options = options;
    this.#prng = prng;
  }

  /** (Re)start from the disk. */
  start(): void {
    this.incarnation++;
    this.tickGen++;
    this.up = true;
    this.paused = false;
    this.inFlight = [];
    this.pendingWrites.clear();
    this.pendingReads.clear();
    const snapshot = this.durable.snapshot();
    this.kv = new KvMachine();
    this.kv.restore(snapshot.data, snapshot.meta.index);
    this.confState = snapshot.meta.confState;
    this.core = new RaftCore(
      {
        ...this.#options.raft,
        id: this.id,
        applied: snapshot.meta.index,
        maxReadiesInFlight: this.#options.storageDepth,
      },
      this.durable,
      this.#prng.fork(),
      this.#options.mutations,
    );
    const checker = this.#ctx.checker;
    checker.onStart(this);
    checker.onRestore(this, snapshot, this.kv.digest, this.kv.stateHash());
  }

  /** kill -9: everything not on disk is gone. */
  crash(): void {
    this.up = false;
    this.paused = false;
    // A pipelined disk may have written some of the writes in flight before the crash: a prefix
    // of them survives (the disk applies writes in order). The core promised nothing about them.
    if (this.#options.storageDepth > 1 && this.inFlight.length > 0) {
      const kept = this.#prng.nextInt(this.inFlight.length + 1);
      for (let i = 0; i < kept; i++) this.durable.persist((this.inFlight[i] as InFlightWrite).rd);
      this.#ctx.stats.crashKeptWrites += kept;
    }
    this.inFlight = [];
    this.tickGen++;
    this.incarnation++;
    this.pendingWrites.clear();
    this.pendingReads.clear();
  }

  /**
   * Process Readys until the pipeline is full or there is nothing left. Each Ready's messages leave
   * at once; it completes (persisted, acknowledgements released, entries applied, advanced) only
   * when it and every earlier one are synced, in order.
   */
  pump(): void {
    this.#turnStart();
    try {
      this.#pumpReadys();
    } finally {
      this.#turnEnd();
    }
  }

  #pumpReadys(): void {
    const ctx = this.#ctx;
    while (this.up && !this.paused && this.core.hasReady()) {
      const rd = this.core.ready();
      ctx.checker.onEntries(this, rd.entries);
      for (const m of rd.messages) this.#release(m);
      const write: InFlightWrite = { rd, synced: !rd.mustSync };
      this.inFlight.push(write);
      if (this.inFlight.length > 1) ctx.stats.pipelinedWrites++;
      if (rd.mustSync) {
        const { fsyncMinMs, fsyncMaxMs, fsyncLateMs } = this.#options;
        let delay = fsyncMinMs + this.#prng.nextFloat() * (fsyncMaxMs - fsyncMinMs);
        if (this.#options.storageDepth > 1 && fsyncLateMs > 0) delay += this.#prng.nextFloat() * fsyncLateMs;
        ctx.scheduleSync(this, delay, write);
      } else if (this.#options.mutations.completeOutOfOrder && this.inFlight.length > 1) {
        // Mutation only: a Ready with nothing to sync lets its acknowledgements go at once.
        for (const m of rd.persistedMessages) this.#release(m);
        this.inFlight[this.inFlight.length - 1] = { rd: { ...rd, persistedMessages: [] }, synced: true };
      }
      this.#completeSynced();
    }
  }

  /** The sync of `write` (default: the oldest write in flight) completed. */
  completeSync(write?: InFlightWrite): void {
    const done = write ?? this.inFlight[0];
    if (done === undefined || !this.inFlight.includes(done)) return;
    this.#turnStart();
    try {
      done.synced = true;
      this.#completeSynced();
      this.#pumpReadys();
    } finally {
      this.#turnEnd();
    }
  }

  /** Messages released since the outermost `#turnStart` (folding only), in release order. */
  #turn: Message[] | undefined;
  #turnDepth = 0;

  #turnStart(): void {
    if (this.#turnDepth++ === 0 && this.#options.foldAppends === true) this.#turn = [];
  }

  /** The outermost turn ends: send its messages, each follower's folded (SimNodeOptions.foldAppends). */
  #turnEnd(): void {
    if (--this.#turnDepth > 0) return;
    const released = this.#turn;
    this.#turn = undefined;
    if (released === undefined || released.length === 0) return;
    const maxBytes = this.#options.raft.maxSizePerMsg;
    const byPeer = new Map<NodeId, { messages: Message[]; lastBytes: number }>();
    for (const m of released) {
      const bytes = entryBytes(m);
      let out = byPeer.get(m.to);
      if (out === undefined) {
        out = { messages: [], lastBytes: 0 };
        byPeer.set(m.to, out);
      }
      const prev = out.messages[out.messages.length - 1];
      const folded = prev === undefined ? undefined : foldInto(prev, m, out.lastBytes, bytes, maxBytes);
      if (folded === undefined) {
        out.messages.push(m);
        out.lastBytes = bytes;
      } else {
        this.#ctx.stats.foldedMessages++;
        if (folded !== prev) {
          out.messages[out.messages.length - 1] = folded;
          out.lastBytes += bytes;
        }
      }
    }
    for (const { messages } of byPeer.values()) for (const m of messages) this.#ctx.send(this, m);
  }

  /** Complete the synced writes at the head of the pipeline, in order. */
  #completeSynced(): void {
    while (this.up && !this.paused) {
      const head = this.inFlight[0];
      if (head === undefined || !head.synced) return;
      this.inFlight.shift();
      this.#finish(head.rd);
    }
  }

  #finish(rd: Ready): void {
    const ctx = this.#ctx;
    const checker = ctx.checker;
    this.durable.persist(rd);
    checker.onPersisted(this);
    // See the commit before anything is applied or compacted away.
    checker.observe(this);
    for (const m of rd.persistedMessages) this.#release(m);
    if (rd.snapshot !== undefined) {
      this.kv.restore(rd.snapshot.data, rd.snapshot.meta.index);
      this.confState = rd.snapshot.meta.confState;
      ctx.stats.snapshotsInstalled++;
      checker.onRestore(this, rd.snapshot, this.kv.digest, this.kv.stateHash());
    }
    for (const entry of rd.committedEntries) {
      const command = this.kv.apply(entry);
      checker.onApply(this, entry, this.kv.digest, ctx.stamp());
      if (entry.type === EntryType.ConfChange) {
        const before = this.core.membership();
        this.confState = this.core.applyConfChange(decodeConfChange(entry.data));
        ctx.onConfChangeApplied(this, before, this.core.membership());
      } else if (command !== undefined && this.pendingWrites.delete(command.opId)) {
        ctx.onWriteApplied(this, command.opId);
      }
    }
    for (const rs of rd.readStates) {
      const read = this.pendingReads.get(rs.context);
      if (read !== undefined && read.index < 0) read.index = rs.index;
    }
    this.core.advance();
    this.#serveReads();
    if (this.kv.appliedIndex - this.durable.snapshot().meta.index >= this.#options.compactEvery)
      this.compact();
  }

  #serveReads(): void {
    if (this.pendingReads.size === 0) return;
    const applied = this.kv.appliedIndex;
    for (const [context, read] of this.pendingReads) {
      if (read.index >= 0 && read.index <= applied) {
        this.pendingReads.delete(context);
        this.#ctx.onReadServed(this, context, this.kv.get(read.key));
      }
    }
  }

  /** Cut a snapshot of the machine at the applied index and drop the log behind it. */
  compact(): void {
    if (!this.up) return;
    const index = this.kv.appliedIndex;
    if (index <= this.durable.snapshot().meta.index || index > this.durable.lastIndex()) return;
    this.durable.compact(index, this.kv.snapshot(), this.confState);
    this.#ctx.stats.snapshotsTaken++;
    this.#ctx.checker.onSnapshotTaken(this, index, this.kv.stateHash());
  }

  #release(m: Message): void {
    const ctx = this.#ctx;
    ctx.checker.onRelease(this, m, ctx.nodeById);
    if (this.#turn !== undefined) this.#turn.push(m);
    else ctx.send(this, m);
  }
}
