// Protocol constants shared by the broker and the SDK.

/** The wire protocol version a client sends in Hello; a server refuses versions it does not speak. */
export const PROTOCOL_VERSION = 1;

/** The TCP port a Styx node listens on for WebSocket clients unless configured otherwise. */
export const DEFAULT_PORT = 5680;

/**
 * The default largest WebSocket message, in bytes, either direction: 8 MiB. It bounds one batch of
 * frames (so one message body plus its frame overhead must fit), and so the memory one socket read
 * can cost. Larger bodies belong in object storage, not a queue; smaller limits cost nothing since
 * senders split batches at frame boundaries. Hello/HelloOk negotiate the effective value (the
 * smaller of the two non-zero sides).
 */
export const DEFAULT_FRAME_MAX = 8 * 1024 * 1024;
