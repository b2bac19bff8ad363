/**
 * The metadata machine's in-memory graph: per vhost, exchanges and queues as nodes, bindings as
 * edges held by both ends. The router walks it directly on publish, so everything a publish needs
 * is a field away: an exchange's routing index, and for an exchange-to-exchange binding the
 * destination exchange node itself (no lookup by name).
 *
 * Invariants (kept by MetadataMachine, relied on by the router):
 * - a BindingEntry is in its vhost's `bindings`, its source's `outgoing` and routing index, and its
 *   destination's `incoming` — in all four or in none;
 * - a node referenced by a live BindingEntry is in its vhost's map (deleting a node first removes
 *   every binding that touches it);
 * - iteration orders are insertion orders, identical on every replica and after restore.
 */
import type { HeadersPattern } from '../router/headers-match.ts';
import type { RoutingIndex } from '../router/routing-index.ts';
import type { BindingRecord, ExchangeRecord, PolicyRecord, QueueRecord, VhostRecord } from './types.ts';

export interface BindingEntry {
  /** Identity: source, destination, routing key and arguments (order-insensitive), as RabbitMQ's. */
  readonly id: string;
  readonly record: BindingRecord;
  readonly source: ExchangeNode;
  readonly destination: ExchangeNode | QueueNode;
  /** Parsed at bind time when the source is a headers exchange; undefined otherwise. */
  readonly headers: HeadersPattern | undefined;
}

export interface ExchangeNode {
  readonly kind: 'exchange';
  readonly record: ExchangeRecord;
  readonly index: RoutingIndex;
  /** Bindings with this exchange as source. */
  readonly outgoing: Set<BindingEntry>;
  /** Bindings with this exchange as destination (exchange-to-exchange). */
  readonly incoming: Set<BindingEntry>;
}

export interface QueueNode {
  readonly kind: 'queue';
  /** Replaced (never mutated) when the queue's replicas change. */
  record: QueueRecord;
  readonly incoming: Set<BindingEntry>;
}

export interface VhostNode {
  readonly record: VhostRecord;
  readonly exchanges: Map<string, ExchangeNode>;
  readonly queues: Map<string, QueueNode>;
  /** Every binding of the vhost by id, in creation order (the order snapshots keep). */
  readonly bindings: Map<string, BindingEntry>;
  /** Policies by name, in creation order (a replaced policy keeps its place). */
  readonly policies: Map<string, PolicyRecord>;
}
