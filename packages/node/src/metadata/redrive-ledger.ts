/**
 * The redrive audit kept by the metadata machine (records: redrive-types.ts). Every command is
 * decided from the command, the entry's time and the state alone, so every replica keeps the same
 * records; bad input (a log entry of the wrong shape) is an error reply, never an exception.
 *
 * Rules:
 * - `startRedrive` adds a record `running`, owned by the proposing node. Ids are unique (406 for
 *   one in use). One real redrive at a time per queue (406 while another runs on it: two would
 *   publish the same messages and both count them); dry runs are not limited. History is bounded: past `MAX_REDRIVE_RECORDS` the oldest finished record is
 *   forgotten; when every record is still running the start is refused (406).
 * - `updateRedrive` replaces the progress (absolute counts) and the state; only the owner may (a
 *   node that lost the redrive to another gets 406 and stops), only while it runs. An end state
 *   stamps `finishedAt`.
 * - `claimRedrive` moves a running redrive to a new owner when its owner is still `previousOwner`
 *   (so two nodes taking over at once cannot both win).
 * - `cancelRedrive` marks a running redrive to be cancelled (its owner ends it `cancelled`); one
 *   that already ended is left as it is (ok, `removed: false`). 404 for an unknown id.
 *
 * Bounds: `MAX_REDRIVE_RECORDS` records; per record, the lists of `RedriveProgress` are capped
 * (`MAX_INFLIGHT_IDS`, `MAX_TARGET_ROWS`, `MAX_FAILURE_ROWS`, `MAX_SAMPLE_ROWS`) and strings are
 * bounded by `MAX_TEXT_LENGTH` (the filter by `MAX_FILTER_JSON_LENGTH` of JSON).
 */
import { ReplyCode } from '@styx/client/wire';
import { isBrowsePosition } from '../queue/message-browse.ts';
import type {
  RedriveCommand,
  RedriveFailureCount,
  RedriveProgress,
  RedriveRecord,
  RedriveSample,
  RedriveSpec,
  RedriveState,
  RedriveTarget,
  RedriveTargetCount,
} from './redrive-types.ts';
import { EMPTY_REDRIVE_PROGRESS, REDRIVE_STATES } from './redrive-types.ts';
import { error, ok } from './replies.ts';
import type { MetadataError, MetadataReply } from './types.ts';

/** Records kept, running or finished (the audit history). */
export const MAX_REDRIVE_RECORDS = 1000;
/** Moved ids whose removal one update may leave in flight. */
export const MAX_INFLIGHT_IDS = 1000;
/** Distinct (exchange, routing key) counts per record. */
export const MAX_TARGET_ROWS = 100;
/** Distinct failure reasons per record. */
export const MAX_FAILURE_ROWS = 50;
/** Messages a dry run's sample shows. */
export const MAX_SAMPLE_ROWS = 50;
/** Longest id, name, reason or error text, characters. */
export const MAX_TEXT_LENGTH = 1024;
/** Largest filter, as JSON characters. */
export const MAX_FILTER_JSON_LENGTH = 64 * 1024;
/** Highest rate, messages per second. */
export const MAX_REDRIVE_RATE = 1_000_000;

type Start = Extract<RedriveCommand, { type: 'startRedrive' }>;
type Update = Extract<RedriveCommand, { type: 'updateRedrive' }>;
type Claim = Extract<RedriveCommand, { type: 'claimRedrive' }>;

function invalid(text: string): MetadataError {
  return error(ReplyCode.PRECONDITION_FAILED, text);
}

function notFound(id: string): MetadataError {
  return error(ReplyCode.NOT_FOUND, `no redrive '${id}'`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isText(v: unknown): v is string {
  return typeof v === 'string' && v.length <= MAX_TEXT_LENGTH;
}

function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

function isOptionalCount(v: unknown): v is number | null {
  return v === null || isCount(v);
}

function isTarget(v: unknown): v is RedriveTarget {
  if (!isObject(v)) return false;
  if (v.kind === 'source') return true;
  return v.kind === 'exchange' && isText(v.exchange) && isText(v.routingKey);
}

/** Why `spec` is unusable, or undefined. */
function checkSpec(spec: unknown): string | undefined {
  if (!isObject(spec)) return 'a redrive spec must be an object';
  if (!isObject(spec.filter)) return 'a redrive filter must be an object';
  if (JSON.stringify(spec.filter).length > MAX_FILTER_JSON_LENGTH)
    return `a redrive filter is larger than ${MAX_FILTER_JSON_LENGTH} characters of JSON`;
  if (!isTarget(spec.target))
    return 'a redrive target must be {kind: source} or {kind: exchange, exchange, routingKey}';
  const { rate, maxMessages } = spec;
  if (rate !== null && (typeof rate !== 'number' || !(rate > 0) || rate > MAX_REDRIVE_RATE))
    return `a redrive rate must be null or a number of messages per second in (0, ${MAX_REDRIVE_RATE}]`;
  if (maxMessages !== null && (!isCount(maxMessages) || maxMessages === 0))
    return 'a redrive max_messages must be null or a whole number >= 1';
  return undefined;
}

function rowsFit<T>(
  rows: unknown,
  max: number,
  fits: (row: Record<string, unknown>) => boolean,
): rows is T[] {
  return Array.isArray(rows) && rows.length <= max && rows.every((row) => isObject(row) && fits(row));
}

/** Why `progress` is unusable, or undefined. */
function checkProgress(p: unknown): string | undefined {
  if (!isObject(p)) return 'redrive progress must be an object';
  if (!isOptionalCount(p.total) || !isOptionalCount(p.bound) || !isOptionalCount(p.cursor))
    return 'redrive progress total, bound and cursor must be null or whole numbers >= 0';
  if (p.position !== undefined && p.position !== null && !isBrowsePosition(p.position))
    return 'redrive progress position must be null or a browse position';
  if (!isCount(p.moved) || !isCount(p.failed))
    return 'redrive progress moved and failed must be whole numbers >= 0';
  if (!Array.isArray(p.inflight) || p.inflight.length > MAX_INFLIGHT_IDS || !p.inflight.every(isCount))
    return `redrive progress inflight must be at most ${MAX_INFLIGHT_IDS} message ids`;
  if (
    !rowsFit<RedriveTargetCount>(
      p.targets,
      MAX_TARGET_ROWS,
      (r) => isText(r.exchange) && isText(r.routingKey) && isCount(r.count),
    )
  )
    return `redrive progress targets must be at most ${MAX_TARGET_ROWS} {exchange, routingKey, count}`;
  if (
    !rowsFit<RedriveFailureCount>(p.failures, MAX_FAILURE_ROWS, (r) => isText(r.reason) && isCount(r.count))
  )
    return `redrive progress failures must be at most ${MAX_FAILURE_ROWS} {reason, count}`;
  if (
    !rowsFit<RedriveSample>(
      p.sample,
      MAX_SAMPLE_ROWS,
      (r) =>
        isCount(r.id) &&
        isText(r.exchange) &&
        isText(r.routingKey) &&
        Array.isArray(r.queues) &&
        r.queues.length <= MAX_TARGET_ROWS &&
        r.queues.every(isText) &&
        (r.failure === null || isText(r.failure)),
    )
  )
    return `redrive progress sample must be at most ${MAX_SAMPLE_ROWS} messages`;
  return undefined;
}

/** A copy holding only the fields of `RedriveProgress` (a command may carry more). */
function cleanProgress(p: RedriveProgress): RedriveProgress {
  return {
    total: p.total,
    bound: p.bound,
    cursor: p.cursor,
    ...(p.position !== undefined && p.position !== null ? { position: { ...p.position } } : {}),
    moved: p.moved,
    failed: p.failed,
    inflight: [...p.inflight],
    targets: p.targets.map((r) => ({ exchange: r.exchange, routingKey: r.routingKey, count: r.count })),
    failures: p.failures.map((r) => ({ reason: r.reason, count: r.count })),
    sample: p.sample.map((r) => ({
      id: r.id,
      exchange: r.exchange,
      routingKey: r.routingKey,
      queues: [...r.queues],
      failure: r.failure,
    })),
  };
}

function cleanSpec(spec: RedriveSpec): RedriveSpec {
  const target: RedriveTarget =
    spec.target.kind === 'source'
      ? { kind: 'source' }
      : { kind: 'exchange', exchange: spec.target.exchange, routingKey: spec.target.routingKey };
  return { filter: spec.filter, target, rate: spec.rate, maxMessages: spec.maxMessages };
}

export class RedriveLedger {
  /** Records by id, oldest first (insertion order: the same on every replica and after restore). */
  readonly #byId = new Map<string, RedriveRecord>();

  /** Every record, newest first. */
  records(): RedriveRecord[] {
    return Array.from(this.#byId.values()).reverse();
  }

  record(id: string): RedriveRecord | undefined {
    return this.#byId.get(id);
  }

  apply(command: RedriveCommand, ts: number): MetadataReply {
    switch (command.type) {
      case 'startRedrive':
        return this.#start(command, ts);
      case 'updateRedrive':
        return this.#update(command, ts);
      case 'claimRedrive':
        return this.#claim(command, ts);
      case 'cancelRedrive':
        return this.#cancel(command.id, ts);
    }
  }

  #start(c: Start, ts: number): MetadataReply {
    if (c.id === '' || !isText(c.id)) return invalid('a redrive id must be 1 to 1024 characters');
    if (![c.user, c.vhost, c.queue, c.groupId, c.owner].every(isText))
      return invalid(`redrive '${c.id}': a name longer than ${MAX_TEXT_LENGTH} characters`);
    const bad = checkSpec(c.spec);
    if (bad !== undefined) return invalid(`redrive '${c.id}': ${bad}`);
    if (this.#byId.has(c.id)) return invalid(`a redrive '${c.id}' exists already`);
    if (!c.dryRun) {
      const busy = this.#runningOn(c.groupId);
      if (busy !== undefined)
        return invalid(
          `redrive '${busy.id}' of queue '${busy.queue}' in vhost '${busy.vhost}' is running: ` +
            'cancel it or wait for it to end',
        );
    }
    if (this.#byId.size >= MAX_REDRIVE_RECORDS) {
      const oldestFinished = this.#oldestFinished();
      if (oldestFinished === undefined)
        return invalid(`${MAX_REDRIVE_RECORDS} redrives are running: wait for one to end, or cancel one`);
      this.#byId.delete(oldestFinished);
    }
    this.#byId.set(c.id, {
      id: c.id,
      user: c.user,
      vhost: c.vhost,
      queue: c.queue,
      groupId: c.groupId,
      dryRun: c.dryRun,
      ...cleanSpec(c.spec),
      owner: c.owner,
      state: 'running',
      cancelRequested: false,
      createdAt: ts,
      updatedAt: ts,
      finishedAt: null,
      error: null,
      takeovers: 0,
      progress: EMPTY_REDRIVE_PROGRESS,
    });
    return ok({ created: true });
  }

  /** A real (not dry) redrive running on queue incarnation `groupId`, if any. */
  #runningOn(groupId: string): RedriveRecord | undefined {
    for (const record of this.#byId.values())
      if (record.state === 'running' && !record.dryRun && record.groupId === groupId) return record;
    return undefined;
  }

  #oldestFinished(): string | undefined {
    for (const record of this.#byId.values()) if (record.state !== 'running') return record.id;
    return undefined;
  }

  #running(id: string): RedriveRecord | MetadataError {
    const record = this.#byId.get(id);
    if (record === undefined) return notFound(id);
    if (record.state !== 'running') return invalid(`redrive '${id}' has ended (${record.state})`);
    return record;
  }

  #update(c: Update, ts: number): MetadataReply {
    const record = this.#running(c.id);
    if ('type' in record) return record;
    if (record.owner !== c.owner)
      return invalid(`redrive '${c.id}' is run by node '${record.owner}', not '${c.owner}'`);
    if (!(REDRIVE_STATES as readonly string[]).includes(c.state))
      return invalid(`redrive state must be one of ${REDRIVE_STATES.join(', ')}`);
    const bad = checkProgress(c.progress);
    if (bad !== undefined) return invalid(`redrive '${c.id}': ${bad}`);
    const errorText = c.error ?? null;
    if (errorText !== null && typeof errorText !== 'string')
      return invalid('a redrive error must be a string');
    const state = c.state as RedriveState;
    this.#byId.set(c.id, {
      ...record,
      state,
      progress: cleanProgress(c.progress),
      updatedAt: ts,
      finishedAt: state === 'running' ? null : ts,
      error: errorText === null ? record.error : errorText.slice(0, MAX_TEXT_LENGTH),
    });
    return ok();
  }

  #claim(c: Claim, ts: number): MetadataReply {
    const record = this.#running(c.id);
    if ('type' in record) return record;
    if (!isText(c.owner) || c.owner === '') return invalid('a redrive owner must be a node id');
    if (record.owner !== c.previousOwner)
      return invalid(`redrive '${c.id}' is run by node '${record.owner}' now, not '${c.previousOwner}'`);
    this.#byId.set(c.id, { ...record, owner: c.owner, takeovers: record.takeovers + 1, updatedAt: ts });
    return ok();
  }

  #cancel(id: string, ts: number): MetadataReply {
    const record = this.#byId.get(id);
    if (record === undefined) return notFound(id);
    if (record.state !== 'running' || record.cancelRequested) return ok();
    this.#byId.set(id, { ...record, cancelRequested: true, updatedAt: ts });
    return ok({ removed: true });
  }

  // ------------------------------------------------------------------------------ snapshots

  /** The records for a snapshot, oldest first. */
  snapshotRecords(): RedriveRecord[] {
    return Array.from(this.#byId.values());
  }

  /** Replace the records with a snapshot's (absent from snapshots written before redrives: none). */
  restore(records: readonly RedriveRecord[] = []): void {
    this.#byId.clear();
    for (const record of records) {
      if (!isObject(record) || typeof record.id !== 'string' || !isObject(record.progress))
        throw new TypeError('a redrive record has an unexpected shape');
      this.#byId.set(record.id, record);
    }
  }
}
