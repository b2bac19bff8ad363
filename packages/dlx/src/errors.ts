/**
 * Errors of `@styx/dlx`, one class per failure mode, each with a stable `code`. All of them mean a
 * caller broke a documented precondition (they are programming or configuration errors, never an
 * expected runtime outcome): expected outcomes — a cycle drop, an unroutable copy, a duplicate
 * hand-off — are return values.
 */

/** An argument is outside its documented domain (a fractional timestamp, a negative id or size...). */
export class DeadLetterInputError extends Error {
  readonly code = 'DLX_INVALID_INPUT';
  constructor(message: string) {
    super(message);
    this.name = 'DeadLetterInputError';
  }
}

/** A bound or policy (pending cap, back-off, dedupe limits) is invalid. */
export class DlxConfigError extends Error {
  readonly code = 'DLX_INVALID_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'DlxConfigError';
  }
}

/**
 * An operation is not valid in the hand-off's current state: adding a message that is already
 * pending, starting an attempt for a message that is not tracked or is already settling.
 */
export class HandOffStateError extends Error {
  readonly code = 'DLX_HAND_OFF_STATE';
  readonly id: number;
  constructor(id: number, message: string) {
    super(`hand-off of message ${id}: ${message}`);
    this.name = 'HandOffStateError';
    this.id = id;
  }
}

/** A snapshot given to a `fromSnapshot` is malformed or of an unknown version. */
export class DlxSnapshotError extends Error {
  readonly code = 'DLX_SNAPSHOT_INVALID';
  constructor(message: string) {
    super(`invalid dead-letter snapshot: ${message}`);
    this.name = 'DlxSnapshotError';
  }
}
