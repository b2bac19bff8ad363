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
  /** Complete this node's pending write `delayMs` from now (the fsync). */
  scheduleSync(node: SimNode, delayMs: number): void;
  /** A write proposed through this node was applied here. */
  onWriteApplied(node: SimNode, opId: number): void;
  /** A read-index read through this node can be answered with `value`. */
  onReadServed(node: SimNode, context: string, value: number): void;
  /** A conf change was applied here, moving the replica from `before` to `after`. */
  onConfChangeApplied(node: SimNode, before: MembershipConfig, after: MembershipConfig): void;
  /** The replica a message is addressed to, for the checker's acknowledgement bookkeeping. */
  nodeById(id: NodeId): SimNode | undefined;
  readonly stats: { snapshotsInstalled: number; snapshotsTaken: number };
}

export interface SimNodeOptions {
  readonly raft: Omit<RaftConfig, 'id' | 'applied'>;
  readonly mutations: Mutations;
  /** fsync latency range in ms. */
  readonly fsyncMinMs: number;
  readonly fsyncMaxMs: number;
  /** Cut a snapshot (and truncate the log) once this many entries were applied since the last one. */
  readonly compactEvery: number;
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
  /** The Ready whose fsync is in progress. */
  syncing: Ready | undefined;
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
    this.syncing = undefined;
    this.pendingWrites.clear();
    this.pendingReads.clear();
    const snapshot = this.durable.snapshot();
    this.kv = new KvMachine();
    this.kv.restore(snapshot.data, snapshot.meta.index);
    this.confState = snapshot.meta.confState;
    this.core = new RaftCore(
      { ...this.#options.raft, id: this.id, applied: snapshot.meta.index },
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
    this.syncing = undefined;
    this.tickGen++;
    this.incarnation++;
    this.pendingWrites.clear();
    this.pendingReads.clear();
  }

  /** Process Readys until one waits for its fsync or there is nothing left. */
  pump(): void {
    const ctx = this.#ctx;
    while (this.up && !this.paused && this.syncing === undefined && this.core.hasReady()) {
      const rd = this.core.ready();
      ctx.checker.onEntries(this, rd.entries);
      for (const m of rd.messages) this.#release(m);
      if (rd.mustSync) {
        this.syncing = rd;
        const { fsyncMinMs, fsyncMaxMs } = this.#options;
        ctx.scheduleSync(this, fsyncMinMs + this.#prng.nextFloat() * (fsyncMaxMs - fsyncMinMs));
        return;
      }
      this.#finish(rd);
    }
  }

  /** The fsync of the pending Ready completed. */
  completeSync(): void {
    const rd = this.syncing;
    if (rd === undefined) return;
    this.syncing = undefined;
    this.#finish(rd);
    this.pump();
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
    ctx.send(this, m);
  }
}
