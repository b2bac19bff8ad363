/**
 * The node's durable storage: ONE LMDB environment in `<dataDir>/lmdb` holding
 * - the log store of every durable group (queues and metadata): entries, hard state, snapshots
 *   (`@styx/raft`'s `logStoreOnEnvironment`, group commit: one transaction + one sync per I/O turn);
 * - the body store of durable queues (`LmdbBodyStore`), whose writes ride in the log store's
 *   batches (one transaction, one sync per I/O turn for both);
 * - `node-meta`: the storage format version and the node's identity.
 *
 * One environment means one writer and one commit order for all of it, which is what makes
 * "a snapshot and its log truncation are durable only after the bodies they rely on" hold without
 * any cross-store coordination (the argument is in lmdb-body-store.ts).
 *
 * The environment is opened with full syncs (no `noSync`, no `noMetaSync`) and without
 * `useWritemap` (the log store's batches are child transactions), as the log store requires.
 */
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { LogStore } from '@styx/raft';
import { logStoreOnEnvironment } from '@styx/raft';
import type { Database, RootDatabase } from 'lmdb';
import { open } from 'lmdb';
import { compactAtOpen } from './compact-at-open.ts';
import { StorageFormatError, StorageMetaCorruptedError } from './errors.ts';
import { LmdbBodyStore } from './lmdb-body-store.ts';
import type { StorageLogger } from './storage-logger.ts';
import { silentStorageLogger } from './storage-logger.ts';

/**
 * The storage format this build writes and reads. Bump it when a change to any stored layout
 * (log entries, command codecs, snapshots, bodies, keys) would be misread by an older build, and
 * teach `openNodeStorage` to upgrade the previous format.
 */
export const STORAGE_FORMAT_VERSION = 3;
// Format history:
// 1 — durable logs were single-voter logs (entries, snapshots; no Raft hard state).
// 2 — durable logs are one-voter Raft groups (hard state, Raft entry framing). A format-1 group is
//     rewritten to format 2 the first time it opens (packages/raft/src/group/group-bootstrap.ts), so
//     opening a format-1 data dir upgrades the record; a format-1 build then refuses the data dir.
// 3 — log entries are stored in runs, one record per group per batch (sub-database `raft-runs`,
//     packages/raft/src/lmdb/entry-run.ts) instead of one record per entry (`raft-entries`). The
//     log storage moves a format-2 data dir's entries into runs when it opens, in chunks of one
//     transaction each, then drops `raft-entries` (packages/raft/src/lmdb/legacy-entry-migration.ts;
//     an interrupted move carries on at the next open). The record is upgraded BEFORE the move
//     starts, so a format-2 build never opens a half-moved data dir: it refuses format 3.
/** Sub-database of the node's own records. */
export const NODE_META_DB = 'node-meta';
/** The key of the storage record in `node-meta`. */
const STORAGE_RECORD_KEY = 'storage';
/**
 * Named sub-databases the environment may hold (LMDB's `maxDbs`): the log store's 3 (and a
 * format-2 data dir's `raft-entries` until the log storage moved it into runs), the body store's 2,
 * `node-meta`, and room for snapshots' streaming or indexes added later.
 */
const MAX_DBS = 16;

/** What `node-meta` holds under `storage`. */
interface StorageRecord {
  /** `STORAGE_FORMAT_VERSION` of the build that created (or last upgraded) the data dir. */
  readonly format: number;
  /** This node's identity, created with the data dir and never changed. */
  readonly nodeId: string;
  /** When the data dir was created, ms since the epoch. */
  readonly createdAt: number;
}

export interface NodeStorage {
  /** The LMDB environment's directory (`<dataDir>/lmdb`). */
  readonly path: string;
  /**
   * This node's identity, stable across restarts: its libp2p peer id for a data dir made by
   * `styx server`, a UUID for one made before clustering (or opened without an id, embedded).
   */
  readonly nodeId: string;
  readonly formatVersion: number;
  /** Entries, hard state and snapshots of every durable log group. */
  readonly logStore: LogStore;
  /** Message bodies of durable queues. */
  readonly bodyStore: LmdbBodyStore;
  /**
   * Make everything queued durable and close the environment. Close the logs (actors) first:
   * writes made after this call reject or throw `StorageClosedError`.
   */
  close(): Promise<void>;
}

/**
 * Open (or create) the node's storage in `dataDir`. Refuses, with `StorageFormatError`, a data dir
 * written by a newer storage format. The caller holds the data dir's lock (one process per dir).
 */
export async function openNodeStorage(
  dataDir: string,
  logger: StorageLogger = silentStorageLogger,
  options: { readonly nodeId?: string } = {},
): Promise<NodeStorage> {
  const path = join(dataDir, 'lmdb');
  await mkdir(path, { recursive: true });
  // A data dir drained since its last start gives its free pages back (see compact-at-open.ts).
  await compactAtOpen(path, logger);
  const root = open({ path, noSync: false, noMetaSync: false, useWritemap: false, maxDbs: MAX_DBS });
  let record: StorageRecord;
  let logStore: LogStore;
  try {
    record = readOrCreateRecord(
      root.openDB<unknown, string>({ name: NODE_META_DB, encoding: 'json' }),
      path,
      options.nodeId,
    );
    // Moves a format-2 data dir's log entries into runs (see the format history), once the record
    // already says format 3; throws, leaving what it moved moved, if an old record is unreadable.
    logStore = logStoreOnEnvironment(root);
  } catch (error) {
    await root.close();
    throw error;
  }
  const bodyStore = new LmdbBodyStore(root, { logger, logStore });
  logger.info({ path, format: record.format, nodeId: record.nodeId }, 'node storage open');
  return new OpenNodeStorage(path, record, root, logStore, bodyStore);
}

/**
 * The data dir's record, created on first open with `nodeId` (the node's libp2p peer id, so the
 * data dir can later form or join a cluster) or a UUID when none is given (embedded use, tests).
 */
function readOrCreateRecord(meta: Database<unknown, string>, path: string, nodeId?: string): StorageRecord {
  const stored = meta.get(STORAGE_RECORD_KEY);
  if (stored === undefined) {
    const record: StorageRecord = {
      format: STORAGE_FORMAT_VERSION,
      nodeId: nodeId ?? randomUUID(),
      createdAt: Date.now(),
    };
    // Synchronous and durable before anything else is written to the new data dir.
    meta.putSync(STORAGE_RECORD_KEY, record);
    return record;
  }
  const record = stored as Partial<StorageRecord> | null;
  const format = record?.format;
  if (typeof format !== 'number' || !Number.isInteger(format) || format < 1) {
    throw new StorageMetaCorruptedError(path, `bad format ${JSON.stringify(format)}`);
  }
  if (format > STORAGE_FORMAT_VERSION) throw new StorageFormatError(path, format, STORAGE_FORMAT_VERSION);
  if (typeof record?.nodeId !== 'string' || typeof record.createdAt !== 'number') {
    throw new StorageMetaCorruptedError(path, 'node identity missing');
  }
  if (format < STORAGE_FORMAT_VERSION) {
    const upgraded: StorageRecord = {
      format: STORAGE_FORMAT_VERSION,
      nodeId: record.nodeId,
      createdAt: record.createdAt,
    };
    meta.putSync(STORAGE_RECORD_KEY, upgraded);
    return upgraded;
  }
  return { format, nodeId: record.nodeId, createdAt: record.createdAt };
}

class OpenNodeStorage implements NodeStorage {
  readonly path: string;
  readonly nodeId: string;
  readonly formatVersion: number;
  readonly logStore: LogStore;
  readonly bodyStore: LmdbBodyStore;
  readonly #root: RootDatabase;
  #closed: Promise<void> | undefined;

  constructor(
    path: string,
    record: StorageRecord,
    root: RootDatabase,
    logStore: LogStore,
    bodyStore: LmdbBodyStore,
  ) {
    this.path = path;
    this.nodeId = record.nodeId;
    this.formatVersion = record.format;
    this.#root = root;
    this.logStore = logStore;
    this.bodyStore = bodyStore;
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    // The log store first: its last batches may still apply entries that write bodies.
    await this.logStore.close();
    await this.bodyStore.close();
    await this.#root.close();
  }
}
