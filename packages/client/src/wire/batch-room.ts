// Frames allocated with room for their batch entry prefix in front (see `withBatchRoom`): a batch of
// one such frame is written in that room instead of being copied into a new batch. Body parts (up to
// frame_max bytes each) go out this way, so a large body is copied once on its way to the socket.

/** Encoded frames whose buffer has their batch prefix's room right before them. */
const roomy = new WeakSet<Uint8Array>();

/** Marks `frame` (a view at offset `room` or more into its buffer) as having that room. */
export function markBatchRoom(frame: Uint8Array): Uint8Array {
  roomy.add(frame);
  return frame;
}

/** Whether `frame` was allocated with room for its batch prefix. */
export function hasBatchRoom(frame: Uint8Array): boolean {
  return roomy.has(frame);
}
