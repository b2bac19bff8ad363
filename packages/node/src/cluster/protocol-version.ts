/**
 * The cluster protocol's version, and what a node does with a message it does not know.
 *
 * Every stream between nodes runs one libp2p protocol id (`/styx/raft/1.0.0`, ...), negotiated per
 * stream by multistream-select: a change of a stream's framing gets a new id, served next to the
 * old one, so old and new nodes still find a framing both speak. Within one framing, what a build
 * adds (an RPC kind, a frame kind, a queue op, a gossip event) is named by `CLUSTER_PROTOCOL_VERSION`
 * and by feature flags (feature-flags.ts), which each node announces once per connection
 * (peer-hello.ts). A node sends a new message only once its feature flag is enabled cluster-wide.
 *
 * A message a receiver does not know (a newer peer's, sent before its flag was enabled, or by a
 * bug) closes nothing: the receiver answers it with `UnknownPeerMessageError`'s text, naming both
 * versions, logs it once per peer and kind (`UnknownMessageLog`), and the stream goes on with the
 * messages it knows. Only bytes that break a known layout close a stream.
 */
import type { Logger } from '../logging/logger.ts';
import { ClusterError } from './errors.ts';

/**
 * This build's cluster protocol version. 1: every build before the hello (peer-hello.ts) and
 * feature flags; such a node answers no hello, and its peers count it version 1 with no flags.
 * 2: the hello, and the flags of feature-flags.ts marked `since: 2`.
 * 3: queue-link op 8, commands answered in binary (flag `binary_queue_answers`), and
 * `queue_founders`.
 * 4: the queue log entry setDedupeWindow (flag `wide_dedupe_window`), and queue-link op 9, a
 * turn's deliveries and cancellations for one node in one call (flag `batched_remote_sends`).
 */
export const CLUSTER_PROTOCOL_VERSION = 4;

/** The version of a peer that answers no hello (a build from before it). */
export const LEGACY_PROTOCOL_VERSION = 1;

/** The protocols whose unknown messages are answered (gossip cannot answer: logged only). */
export type ClusterProtocol = 'raft' | 'rpc' | 'queue-link' | 'gossip';

/** What a protocol needs to name versions: this node's, and each peer's as its hello said. */
export interface PeerVersions {
  readonly localVersion: number;
  /** The version `peer` announced on its current connection; undefined before its hello. */
  versionOf(peer: string): number | undefined;
}

/** A fixed book, for a protocol started without the hello (tests, a node alone). */
export function fixedVersions(localVersion = CLUSTER_PROTOCOL_VERSION): PeerVersions {
  return { localVersion, versionOf: () => undefined };
}

const versionText = (version: number | undefined): string =>
  version === undefined ? 'unknown version (no hello yet)' : `cluster protocol version ${version}`;

/**
 * The text of an answer to a message the receiver does not know: "node R (cluster protocol
 * version 1) does not know rpc kind 'queue.bodies' sent by node S (cluster protocol version 2)".
 */
export function unknownMessageText(details: {
  readonly protocol: ClusterProtocol;
  readonly what: string;
  readonly sender: string;
  readonly senderVersion: number | undefined;
  readonly receiver: string;
  readonly receiverVersion: number | undefined;
}): string {
  const { protocol, what, sender, senderVersion, receiver, receiverVersion } = details;
  return (
    `node ${receiver} (${versionText(receiverVersion)}) does not know ${protocol} ${what} sent by ` +
    `node ${sender} (${versionText(senderVersion)}); the stream stays open for the messages it knows`
  );
}

/** A message one side did not know: which, between whom, at which versions. */
export interface UnknownMessage {
  readonly protocol: ClusterProtocol;
  /** The message, e.g. "rpc kind 'queue.bodies'", "frame kind 9". */
  readonly what: string;
  /** The other node. */
  readonly peer: string;
  readonly senderVersion: number | undefined;
  readonly receiverVersion: number | undefined;
}

/**
 * The unknown message `what` that `peer` sent this node (`self`), with the text its answer carries;
 * versions from `versions`.
 */
export function receivedUnknown(
  versions: PeerVersions,
  self: string,
  peer: string,
  protocol: ClusterProtocol,
  what: string,
): { readonly message: UnknownMessage; readonly text: string } {
  const senderVersion = versions.versionOf(peer);
  const receiverVersion = versions.localVersion;
  const message = { protocol, what, peer, senderVersion, receiverVersion };
  const text = unknownMessageText({
    protocol,
    what,
    sender: peer,
    senderVersion,
    receiver: self,
    receiverVersion,
  });
  return { message, text };
}

/**
 * A Raft frame or a gossip event one side did not know (logged: a Raft sender learns it from the
 * receiver's answer frame, gossip cannot answer). The RPC and the queue link reject the call that
 * carried an unknown message with their own subclasses of their remote errors, with the same fields.
 */
export class UnknownPeerMessageError extends ClusterError implements UnknownMessage {
  readonly protocol: ClusterProtocol;
  readonly what: string;
  readonly peer: string;
  readonly senderVersion: number | undefined;
  readonly receiverVersion: number | undefined;
  /** `text`: the receiver's, naming both versions (`unknownMessageText`). */
  constructor(details: UnknownMessage, text: string) {
    super('UNKNOWN_MESSAGE', text);
    this.protocol = details.protocol;
    this.what = details.what;
    this.peer = details.peer;
    this.senderVersion = details.senderVersion;
    this.receiverVersion = details.receiverVersion;
  }
}

/** Bound on the (peer, protocol, message) triples remembered as logged: past it, the oldest go. */
const MAX_LOGGED = 1_024;

/**
 * Logs each unknown message once per peer, protocol and message (a flood of one unknown frame is
 * one warning, not one per frame); repeats go to debug.
 */
export class UnknownMessageLog {
  readonly #log: Logger;
  readonly #logged = new Set<string>();

  constructor(logger: Logger) {
    this.#log = logger;
  }

  /** `direction`: this node received it, or a peer answered that it does not know it. */
  report(message: UnknownMessage, text: string, direction: 'received' | 'refused by the peer'): void {
    const key = `${message.peer}\u0000${message.protocol}\u0000${message.what}\u0000${direction}`;
    const fields = {
      peer: message.peer,
      protocol: message.protocol,
      message: message.what,
      senderVersion: message.senderVersion,
      receiverVersion: message.receiverVersion,
    };
    if (this.#logged.has(key)) {
      this.#log.debug(fields, text);
      return;
    }
    if (this.#logged.size >= MAX_LOGGED) {
      const oldest = this.#logged.values().next().value as string;
      this.#logged.delete(oldest);
    }
    this.#logged.add(key);
    const lead = direction === 'received' ? 'unknown message from a peer' : 'a peer does not know a message';
    this.#log.warn(fields, `${lead} (logged once per peer and message): ${text}`);
  }
}
