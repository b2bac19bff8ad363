/** Errors of the queue subsystem. Each has a stable `code`. */

/** A snapshot handed to `QueueMachine.restore` is truncated, of an unknown version or inconsistent. */
export class QueueSnapshotError extends Error {
  readonly code = 'QUEUE_SNAPSHOT_INVALID';
  constructor(message: string) {
    super(`invalid queue snapshot: ${message}`);
    this.name = 'QueueSnapshotError';
  }
}

/** A message the queue machine holds has no body in the body store: the store lost it. */
export class QueueBodyMissingError extends Error {
  readonly code = 'QUEUE_BODY_MISSING';
  readonly groupId: string;
  readonly id: number;
  constructor(groupId: string, id: number) {
    super(`queue group ${groupId}: body of message ${id} missing from the body store`);
    this.name = 'QueueBodyMissingError';
    this.groupId = groupId;
    this.id = id;
  }
}

/** `QueueActor.open()` called on an actor that is already open or closed. */
export class QueueActorStateError extends Error {
  readonly code = 'QUEUE_ACTOR_STATE';
  constructor(message: string) {
    super(message);
    this.name = 'QueueActorStateError';
  }
}
