import type { GossipSub, Message } from '@libp2p/gossipsub';
import type { Logger } from '../logging/logger.ts';

/** The gossipsub topic of cluster events. The version suffix changes with the event format. */
export const CLUSTER_EVENTS_TOPIC = '/styx/cluster-events/1';

/**
 * A cluster event: a hint that lets nodes react sooner (route to a new leader, re-read metadata,
 * mark a node down in a view). Never something correctness rests on — Raft, the metadata group
 * and the queue-RPC `not_leader` answers are the truth; gossip may be late, lost or duplicated.
 */
export type ClusterEvent =
  /**
   * A node started (or came back) and listens for peers at `address` (`host:port`), as process
   * `incarnation` (absent from nodes that predate it): a new one tells peers it restarted.
   */
  | {
      readonly kind: 'node-up';
      readonly nodeId: string;
      readonly address: string;
      readonly incarnation?: string | undefined;
    }
  /** A node saw `nodeId`'s connection close (or is itself stopping, when `nodeId` is its own). */
  | { readonly kind: 'node-down'; readonly nodeId: string }
  /** `leader` leads Raft group `groupId` in `term` (undefined: no known leader). */
  | {
      readonly kind: 'group-leader';
      readonly groupId: string;
      readonly term: number;
      readonly leader: string | undefined;
    }
  /** The metadata group applied up to `index`: a node behind it may catch up now. */
  | { readonly kind: 'metadata-hint'; readonly index: number };

/** The kinds of `ClusterEvent`. */
export type ClusterEventKind = ClusterEvent['kind'];

/** A received event and the node that published it (proven by the message signature). */
export type ClusterEventHandler = (event: ClusterEvent, from: string) => void;

/** Bound on an encoded event, bytes: events are small records, anything bigger is garbage. */
const MAX_EVENT_BYTES = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Typed publish/subscribe of `ClusterEvent`s over gossipsub, as JSON on `CLUSTER_EVENTS_TOPIC`.
 * Messages are signed by their publisher's node key (gossipsub's default strict signing), so
 * `from` is the publisher's node id. Malformed events are dropped and logged at debug. An event of
 * a kind this version does not know (a newer node's: it publishes new kinds only once their feature
 * flag is enabled) is dropped too and given to `onUnknownKind`: gossip has no way to answer it.
 */
export class ClusterGossip {
  readonly #pubsub: GossipSub;
  readonly #log: Logger;
  readonly #handlers = new Set<ClusterEventHandler>();
  #started = false;

  readonly #onUnknownKind: ((kind: string, from: string) => void) | undefined;

  constructor(pubsub: GossipSub, logger: Logger, onUnknownKind?: (kind: string, from: string) => void) {
    this.#pubsub = pubsub;
    this.#log = logger.child({ component: 'cluster-gossip' });
    this.#onUnknownKind = onUnknownKind;
  }

  /** Join the topic: from now on peers forward events to this node. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#pubsub.addEventListener('message', this.#onMessage);
    this.#pubsub.subscribe(CLUSTER_EVENTS_TOPIC);
  }

  /** Leave the topic and drop every handler. */
  stop(): void {
    if (!this.#started) return;
    this.#started = false;
    this.#pubsub.removeEventListener('message', this.#onMessage);
    this.#pubsub.unsubscribe(CLUSTER_EVENTS_TOPIC);
    this.#handlers.clear();
  }

  /** Call `handler` with every event other nodes publish; returns the function that stops it. */
  subscribe(handler: ClusterEventHandler): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  /**
   * Publish `event` to the nodes subscribed to the topic; resolves with how many peers it was sent
   * to (0 while none is connected: a hint may be lost, by design).
   */
  async publish(event: ClusterEvent): Promise<number> {
    const result = await this.#pubsub.publish(CLUSTER_EVENTS_TOPIC, encoder.encode(JSON.stringify(event)));
    return result.recipients.length;
  }

  /** The node ids currently subscribed to cluster events (as this node knows them). */
  subscribers(): string[] {
    return this.#pubsub.getSubscribers(CLUSTER_EVENTS_TOPIC).map((peer) => peer.toString());
  }

  readonly #onMessage = (evt: CustomEvent<Message>): void => {
    const message = evt.detail;
    if (message.topic !== CLUSTER_EVENTS_TOPIC || message.type !== 'signed') return;
    const from = message.from.toString();
    const event = parseClusterEvent(message.data);
    if (event === undefined) {
      const kind = unknownEventKind(message.data);
      if (kind !== undefined) this.#onUnknownKind?.(kind, from);
      else this.#log.debug({ from, bytes: message.data.byteLength }, 'dropped a malformed cluster event');
      return;
    }
    for (const handler of this.#handlers) {
      try {
        handler(event, from);
      } catch (error) {
        this.#log.error({ err: error, kind: event.kind }, 'cluster event handler failed');
      }
    }
  };
}

const KNOWN_KINDS: ReadonlySet<string> = new Set<ClusterEventKind>([
  'node-up',
  'node-down',
  'group-leader',
  'metadata-hint',
]);

/** The kind of an event that is a JSON object with a string `kind` this version does not know. */
export function unknownEventKind(data: Uint8Array): string | undefined {
  if (data.byteLength > MAX_EVENT_BYTES) return undefined;
  try {
    const kind = (JSON.parse(decoder.decode(data)) as { kind?: unknown } | null)?.kind;
    return typeof kind === 'string' && kind !== '' && !KNOWN_KINDS.has(kind) ? kind.slice(0, 64) : undefined;
  } catch {
    return undefined;
  }
}

/** Decode and check one event; undefined when it is not a well-formed `ClusterEvent`. */
export function parseClusterEvent(data: Uint8Array): ClusterEvent | undefined {
  if (data.byteLength > MAX_EVENT_BYTES) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const isString = (x: unknown): x is string => typeof x === 'string' && x.length > 0;
  const isIndex = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
  switch (v.kind) {
    case 'node-up':
      if (!isString(v.nodeId) || !isString(v.address)) return undefined;
      if (v.incarnation !== undefined && !isString(v.incarnation)) return undefined;
      return { kind: 'node-up', nodeId: v.nodeId, address: v.address, incarnation: v.incarnation };
    case 'node-down':
      return isString(v.nodeId) ? { kind: 'node-down', nodeId: v.nodeId } : undefined;
    case 'group-leader':
      return isString(v.groupId) && isIndex(v.term) && (v.leader === undefined || isString(v.leader))
        ? { kind: 'group-leader', groupId: v.groupId, term: v.term, leader: v.leader }
        : undefined;
    case 'metadata-hint':
      return isIndex(v.index) ? { kind: 'metadata-hint', index: v.index } : undefined;
    default:
      return undefined;
  }
}
