/** Errors of the node's durable storage. Each failure mode has its own class and a stable `code`. */

/** Base class: every storage error carries a stable `code`. */
export class StorageError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * The data dir was written by a newer Styx (a storage format this build does not know). Opening it
 * anyway could misread or overwrite data a newer node relies on, so the node refuses to start.
 */
export class StorageFormatError extends StorageError {
  readonly found: number;
  readonly supported: number;
  constructor(path: string, found: number, supported: number) {
    super(
      'STORAGE_FORMAT_UNSUPPORTED',
      `data dir ${path} has storage format ${found}, this build supports up to ${supported}: ` +
        'run a Styx version that knows this format (downgrades are not supported)',
    );
    this.found = found;
    this.supported = supported;
  }
}

/** The storage's metadata record is unreadable (not written by any Styx version). */
export class StorageMetaCorruptedError extends StorageError {
  constructor(path: string, detail: string) {
    super('STORAGE_META_CORRUPTED', `data dir ${path}: storage metadata is corrupted: ${detail}`);
  }
}

/** A write was attempted on a storage (or body store) that is closing or closed. */
export class StorageClosedError extends StorageError {
  constructor(what: string) {
    super('STORAGE_CLOSED', `${what} is closed`);
  }
}

/**
 * A body store write failed to commit. The store accepts no further writes: a later write becoming
 * durable after an earlier one was lost could leave a snapshot pointing at a missing body.
 */
export class BodyStoreFailedError extends StorageError {
  constructor(cause: unknown) {
    super('BODY_STORE_FAILED', `body store write failed: ${String(cause)}`, { cause });
  }
}

/** Stored bytes (a log entry or a body) do not decode: written by a bug or damaged on disk. */
export class StoredBytesCorruptedError extends StorageError {
  constructor(what: string, detail: string) {
    super('STORED_BYTES_CORRUPTED', `${what} does not decode: ${detail}`);
  }
}
