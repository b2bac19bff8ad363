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

/**
 * Frames shorter than this are never looked up: the small frames of the hot path (acks, small
 * deliveries) cost a length test, not a WeakSet lookup. A small frame with room (the last part of a
 * body) is then joined as any other, which is only a copy of a few bytes.
 */
const LOOKED_UP_FROM = 1024;

/** Whether `frame` was allocated with room for its batch prefix (and is worth writing in place). */
export function hasBatchRoom(frame: Uint8Array): boolean {
  return frame.length >= LOOKED_UP_FROM && roomy.has(frame);
}
