/**
 * The redrives of one node: it starts those asked of it (the record first, in the metadata group,
 * then its runner), and watches the records for redrives that must run here:
 * - its own records still `running` with no runner here: it restarted midway, so it resumes them;
 * - records of an owner that is gone (no longer a member, or unreachable for `takeoverAfterMs`):
 *   the node leading the metadata group claims them (compare-and-set on the owner, so two nodes
 *   cannot both win) and resumes them. One node decides, so a takeover does not race itself; an
 *   owner that was only cut off finds the record taken when it next writes progress, and stops.
 *
 * A resumed redrive goes on from its committed progress (redrive-runner.ts): what it moved is
 * counted exactly; copies published after the last committed batch are published again.
 */
import { randomBytes } from 'node:crypto';
import type { RedriveCommand, RedriveRecord, RedriveSpec } from '../metadata/redrive-types.ts';
import { EMPTY_REDRIVE_PROGRESS } from '../metadata/redrive-types.ts';
import type { MetadataError, QueueRecord } from '../metadata/types.ts';
import type { RedriveRunPort } from './redrive-runner.ts';
import { RedriveRunner } from './redrive-runner.ts';

export interface RedriveJobsPort extends RedriveRunPort {
  /** Every redrive record, newest first. */
  records(): readonly RedriveRecord[];
  /** Whether this node leads the metadata group now. */
  leadsMetadata(): boolean;
  /** Whether node `id` is gone: not a member, or unreachable from here. */
  nodeGone(id: string): boolean;
}

export interface RedriveJobsOptions {
  /** How often the records are looked over, ms. */
  readonly watchMs?: number;
  /** How long an owner must stay unreachable before its redrives are taken over, ms. */
  readonly takeoverAfterMs?: number;
}

/** What a new redrive is. */
export interface NewRedrive {
  readonly user: string;
  readonly queue: QueueRecord;
  readonly spec: RedriveSpec;
  readonly dryRun: boolean;
}

/** The metadata group refused a redrive command (the API answers it like other refusals). */
export class RedriveRefusedError extends Error {
  readonly code = 'REDRIVE_REFUSED';
  readonly reply: MetadataError;
  constructor(reply: MetadataError) {
    super(reply.text);
    this.name = 'RedriveRefusedError';
    this.reply = reply;
  }
}

const DEFAULT_WATCH_MS = 2000;
const DEFAULT_TAKEOVER_AFTER_MS = 5000;

interface Running {
  readonly runner: RedriveRunner;
  readonly done: Promise<void>;
}

export class RedriveJobs {
  readonly #port: RedriveJobsPort;
  readonly #watchMs: number;
  readonly #takeoverAfterMs: number;
  readonly #running = new Map<string, Running>();
  /** Owners seen unreachable, and since when (this node's clock, ms). */
  readonly #goneSince = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #watching = false;
  #stopped = false;

  constructor(port: RedriveJobsPort, options: RedriveJobsOptions = {}) {
    this.#port = port;
    this.#watchMs = options.watchMs ?? DEFAULT_WATCH_MS;
    this.#takeoverAfterMs = options.takeoverAfterMs ?? DEFAULT_TAKEOVER_AFTER_MS;
  }

  /** Start watching the records (at once, then every `watchMs`). */
  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    this.#timer = setInterval(() => void this.#watch(), this.#watchMs);
    this.#timer.unref();
    queueMicrotask(() => void this.#watch());
  }

  /** Stop every runner here without ending their records (they are resumed later). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    const running = [...this.#running.values()];
    for (const { runner } of running) runner.stop();
    await Promise.allSettled(running.map((r) => r.done));
  }

  /**
   * Record a new redrive and start it here; it resolves at once with its record `running`. A dry
   * run is not recorded (the audit keeps what was done, and a user's dry runs must not push
   * others' records out of it): it is counted here and resolves, once done, with a record of it
   * that only the caller sees.
   */
  async create(request: NewRedrive): Promise<RedriveRecord> {
    const id = `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    const { queue } = request;
    if (request.dryRun) return this.#dryRun(id, request);
    await this.#propose({
      type: 'startRedrive',
      id,
      user: request.user,
      vhost: queue.vhost,
      queue: queue.name,
      groupId: queue.groupId,
      owner: this.#port.selfId,
      dryRun: request.dryRun,
      spec: request.spec,
    });
    void this.#launch(id);
    return this.#record(id);
  }

  async #dryRun(id: string, request: NewRedrive): Promise<RedriveRecord> {
    const { queue, spec } = request;
    const now = Date.now();
    const record: RedriveRecord = {
      id,
      user: request.user,
      vhost: queue.vhost,
      queue: queue.name,
      groupId: queue.groupId,
      dryRun: true,
      ...spec,
      owner: this.#port.selfId,
      state: 'running',
      cancelRequested: false,
      createdAt: now,
      updatedAt: now,
      finishedAt: null,
      error: null,
      takeovers: 0,
      progress: EMPTY_REDRIVE_PROGRESS,
    };
    try {
      const tally = await new RedriveRunner(this.#port, id).plan(record);
      const finishedAt = Date.now();
      return { ...record, state: 'done', updatedAt: finishedAt, finishedAt, progress: tally.progress([]) };
    } catch (error) {
      const finishedAt = Date.now();
      const text = error instanceof Error ? error.message : String(error);
      return { ...record, state: 'failed', updatedAt: finishedAt, finishedAt, error: text };
    }
  }

  /** Ask a running redrive to stop (its owner ends it `cancelled`); the record as it is then. */
  async cancel(id: string): Promise<RedriveRecord> {
    await this.#propose({ type: 'cancelRedrive', id });
    return this.#record(id);
  }

  /** Resolves when the runner of `id` on this node (if any) returns. */
  async settled(id: string): Promise<void> {
    await this.#running.get(id)?.done;
  }

  /** Whether a runner of `id` runs on this node. */
  runsHere(id: string): boolean {
    return this.#running.has(id);
  }

  async #propose(command: RedriveCommand): Promise<void> {
    const reply = await this.#port.propose(command);
    if (reply.type === 'error') throw new RedriveRefusedError(reply);
  }

  #record(id: string): RedriveRecord {
    const record = this.#port.record(id);
    if (record === undefined) throw new Error(`redrive '${id}' committed but not found here`);
    return record;
  }

  #launch(id: string): Promise<void> {
    const existing = this.#running.get(id);
    if (existing !== undefined) return existing.done;
    const runner = new RedriveRunner(this.#port, id);
    const done = runner
      .run()
      .catch((err: unknown) => this.#port.logger.error({ err, redrive: id }, 'redrive runner failed'))
      .finally(() => {
        if (this.#running.get(id)?.runner === runner) this.#running.delete(id);
      });
    this.#running.set(id, { runner, done });
    return done;
  }

  async #watch(): Promise<void> {
    if (this.#watching || this.#stopped) return;
    this.#watching = true;
    try {
      const self = this.#port.selfId;
      const now = Date.now();
      const running = this.#port.records().filter((r) => r.state === 'running');
      for (const owner of [...this.#goneSince.keys()])
        if (!this.#port.nodeGone(owner)) this.#goneSince.delete(owner);
      for (const record of running) {
        if (this.#stopped) return;
        if (record.owner === self) {
          if (!this.#running.has(record.id)) {
            this.#port.logger.info({ redrive: record.id }, 'resuming a redrive of this node');
            void this.#launch(record.id);
          }
          continue;
        }
        if (!this.#port.leadsMetadata() || !this.#port.nodeGone(record.owner)) continue;
        const since = this.#goneSince.get(record.owner) ?? now;
        this.#goneSince.set(record.owner, since);
        if (now - since < this.#takeoverAfterMs) continue;
        const reply = await this.#port.propose({
          type: 'claimRedrive',
          id: record.id,
          owner: self,
          previousOwner: record.owner,
        });
        if (reply.type === 'ok') {
          this.#port.logger.info(
            { redrive: record.id, previousOwner: record.owner },
            'taking over a redrive whose node is gone',
          );
          void this.#launch(record.id);
        }
      }
    } catch (err) {
      this.#port.logger.debug({ err }, 'redrive watch: will look again');
    } finally {
      this.#watching = false;
    }
  }
}
