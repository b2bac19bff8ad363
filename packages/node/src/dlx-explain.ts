/**
 * `explain` for dead-lettering (`styx ctl explain_dead_lettering`, `GET /api/queues/{vhost}/{name}/
 * dead-lettering`): what happens right now to a message leaving a queue for each of the guide's
 * four reasons, from the queue's effective configuration and the topology as it stands. Pure: it
 * reads a `TopologyView` (the metadata and the router) and returns a JSON-ready object whose shape
 * the README documents (the web UI reads it: add fields, never rename or remove one).
 *
 * The rules it applies, as Styx runs them (queue/queue-machine.ts, @styx/dlx):
 * - triggers: `rejected` whenever a consumer rejects or nacks without requeue; `expired` for every
 *   message when the queue has a message TTL, else only for messages published with an
 *   `expiration`; `maxlen` with a length limit under `drop-head` (the head is dropped) or
 *   `reject-publish-dlx` (the refused publish is dead-lettered), never under `reject-publish`;
 *   `delivery_limit` with a delivery limit (any queue: Styx counts deliveries on every queue).
 *   A queue that expires as a whole (`x-expires`) deletes its messages: not dead-lettered.
 * - DLX, DLK, strategy and overflow: the argument wins over the policy; limits: the smaller of the
 *   two (metadata/effective-config.ts). Each setting says where it came from.
 * - routing: with a DLK, a copy is routed with that one key; without, with the keys its message was
 *   published with (routing key, CC and BCC keys): where it goes depends on the message, so the
 *   routes are worked out for the keys that bring messages into this queue (its name through the
 *   default exchange, and the keys of its bindings; a wildcard or fanout binding brings keys that
 *   cannot be listed).
 * - strategy: without a DLX the message is dropped. At-most-once publishes the copy without
 *   confirms and forgets the message: a missing DLX, no route, or a target that is unavailable or
 *   refuses loses it. At-least-once (Styx's default for durable queues, whatever the overflow
 *   mode) keeps the message pending until every target confirmed its copy; while the DLX is
 *   missing or routes nowhere the messages wait, and publishes are refused at the pending cap.
 *   RabbitMQ runs at-least-once only with `overflow: reject-publish` and falls back to at-most-once
 *   otherwise: said as a note, since a topology copied to RabbitMQ would lose that guarantee.
 * - cycles (the guide): a copy that would reach a queue it already died in is dropped there when
 *   no dead-lettering in that cycle was a rejection. Paths are followed from the queue through the
 *   targets' own dead-lettering (for every reason that can trigger there), carrying the keys (a
 *   DLK replaces them), up to `MAX_PATH_QUEUES` queues and `MAX_PATHS` paths.
 */
import type { FieldTable } from '@styx/client/wire';
import { tableGet } from '@styx/client/wire';
import type { DeadLetterReason } from '@styx/dlx';
import { DEAD_LETTER_REASONS } from '@styx/dlx';
import { effectiveQueueConfig } from './metadata/effective-config.ts';
import type { MetadataMachine } from './metadata/metadata-machine.ts';
import type {
  BindingRecord,
  ExchangeRecord,
  ExchangeType,
  PolicyDefinition,
  PolicyRecord,
  QueueRecord,
} from './metadata/types.ts';
import type { QueueConfig } from './queue/types.ts';
import { route } from './router/route.ts';

/** A path followed for cycles holds at most this many queues. */
export const MAX_PATH_QUEUES = 8;
/** At most this many paths are followed per reason. */
export const MAX_PATHS = 256;

/** What `explainDeadLettering` reads: the vhost's topology and the router. */
export interface TopologyView {
  queue(vhost: string, name: string): QueueRecord | undefined;
  exchange(vhost: string, name: string): ExchangeRecord | undefined;
  bindings(vhost: string): readonly BindingRecord[];
  /** The policy that applies to a queue, if any (MetadataMachine.policyFor). */
  policyFor(vhost: string, kind: 'queue', name: string): PolicyRecord | undefined;
  /** The queues a message published to `exchange` with `keys` reaches (router/route.ts). */
  route(vhost: string, exchange: string, keys: readonly string[]): ReadonlySet<string>;
}

/** The view of a metadata store, routing as publishes do (no headers: see `depends_on_headers`). */
export function metadataTopology(metadata: MetadataMachine): TopologyView {
  return {
    queue: (vhost, name) => metadata.queue(vhost, name),
    exchange: (vhost, name) => metadata.exchange(vhost, name),
    bindings: (vhost) => metadata.bindings(vhost),
    policyFor: (vhost, kind, name) => metadata.policyFor(vhost, kind, name),
    route: (vhost, exchange, keys) => route(metadata, vhost, exchange, keys, undefined),
  };
}

/** Where a setting's value came from. */
export interface SettingSource {
  /** `smaller_of_both`: a limit set by both, the smaller wins. */
  readonly from: 'argument' | 'policy' | 'smaller_of_both' | 'default';
  /** The policy, when it had a say. */
  readonly policy: string | null;
}

export interface Setting<T> {
  readonly value: T | null;
  readonly source: SettingSource;
}

/** One set of keys a copy may carry, and where the DLX sends it with them. */
export interface DeadLetterRoute {
  /** The keys; null when they cannot be listed (`pattern` says what is known of them). */
  readonly keys: readonly string[] | null;
  /**
   * `dead_letter_routing_key`: the DLK, whatever the message; `default_exchange`: a message
   * published to this queue by its name; `binding`: a message routed here by a binding's key;
   * `binding_pattern`: by a wildcard (topic) or any-key (fanout, headers) binding: the key is not known.
   */
  readonly key_source: 'dead_letter_routing_key' | 'default_exchange' | 'binding' | 'binding_pattern';
  /** The binding that brings such messages here: its exchange and key. */
  readonly via: { readonly exchange: string; readonly binding_key: string } | null;
  /** The queues the copy reaches, sorted; null when unknown (key not listed, or headers routing). */
  readonly queues: readonly string[] | null;
}

/** A hop of a dead-letter path: a queue, and the reason the message leaves it. */
export interface PathHop {
  readonly queue: string;
  readonly reason: DeadLetterReason;
}

export interface DeadLetterCycle {
  /** From this queue round to `closes_at` (the last hop is the dead-lettering that reaches it again). */
  readonly path: readonly PathHop[];
  /** The queue the copy reaches a second time. */
  readonly closes_at: string;
  /** True when no hop of the cycle is a rejection: the guide's rule drops the copy there. */
  readonly dropped: boolean;
}

export type Trigger = 'consumer' | 'queue' | 'publisher' | 'never';

export interface ReasonExplanation {
  readonly reason: DeadLetterReason;
  readonly can_trigger: boolean;
  /** Who makes it happen: a consumer's reject, the queue's own settings, a publisher's expiration, or nobody. */
  readonly trigger: Trigger;
  /** When it triggers, in words. */
  readonly when: string;
  /**
   * What becomes of such a message: `dead_lettered` (routed to the DLX), `dropped` (no DLX, or
   * at-most-once with nowhere to go), `held` (at-least-once with nowhere to go: it waits), or
   * `not_applicable` (the reason cannot trigger).
   */
  readonly outcome: 'dead_lettered' | 'dropped' | 'held' | 'not_applicable';
  readonly what_happens: string;
  readonly cycles: readonly DeadLetterCycle[];
  /** More paths than `MAX_PATHS` (or longer than `MAX_PATH_QUEUES`) were left unexplored. */
  readonly cycles_truncated: boolean;
}

export type WarningCode =
  | 'no_dead_letter_exchange'
  | 'dead_letter_exchange_missing'
  | 'dead_letter_exchange_routes_nowhere'
  | 'dead_letter_exchange_routes_nowhere_for_some_keys'
  | 'cycle_without_reject'
  | 'at_most_once_loss_possible'
  | 'at_least_once_overflow'
  | 'target_drops_silently'
  | 'queue_expiry_discards_messages';

export interface ExplainWarning {
  readonly code: WarningCode;
  /** `error`: messages are lost or stuck now; `warning`: they can be; `info`: worth knowing. */
  readonly severity: 'error' | 'warning' | 'info';
  /** The reasons it concerns (empty: the queue as a whole). */
  readonly reasons: readonly DeadLetterReason[];
  readonly message: string;
}

export interface DeadLetterExplanation {
  readonly vhost: string;
  readonly queue: string;
  readonly durable: boolean;
  /** The policy that applies to the queue (even when its arguments override all of it). */
  readonly policy: string | null;
  readonly dead_letter_exchange: Setting<string> & {
    readonly exists: boolean | null;
    readonly type: ExchangeType | null;
  };
  readonly dead_letter_routing_key: Setting<string>;
  readonly strategy: Setting<'at-most-once' | 'at-least-once'> & {
    /** What runs: `none` without a DLX. */
    readonly effective: 'at-most-once' | 'at-least-once' | 'none';
    /** RabbitMQ's at-least-once needs `overflow: reject-publish` (Styx's does not). */
    readonly rabbitmq_needs_reject_publish: boolean;
  };
  readonly overflow: Setting<QueueConfig['overflow']>;
  readonly limits: {
    readonly message_ttl: Setting<number>;
    readonly max_length: Setting<number>;
    readonly max_length_bytes: Setting<number>;
    readonly delivery_limit: Setting<number>;
    readonly expires: Setting<number>;
  };
  readonly routing: {
    /** `dead_letter_routing_key`: every copy is routed with the DLK; `message_keys`: with its own keys. */
    readonly uses: 'dead_letter_routing_key' | 'message_keys' | 'none';
    /** The DLX (or an exchange bound to it) is a headers exchange: routes depend on the headers too. */
    readonly depends_on_headers: boolean;
    readonly routes: readonly DeadLetterRoute[];
  };
  readonly reasons: readonly ReasonExplanation[];
  readonly warnings: readonly ExplainWarning[];
}

/** The queue is not in the view (the API's 404). */
export class ExplainQueueNotFoundError extends Error {
  readonly code = 'EXPLAIN_QUEUE_NOT_FOUND';
  constructor(vhost: string, name: string) {
    super(`no queue '${name}' in vhost '${vhost}'`);
    this.name = 'ExplainQueueNotFoundError';
  }
}

// ------------------------------------------------------------------------------ settings and sources

const NO_POLICY_SOURCE: SettingSource = { from: 'default', policy: null };

/** A choice (argument wins over policy): where its value came from. */
function choiceSource(
  args: FieldTable,
  argKey: string,
  policy: PolicyRecord | undefined,
  policyKey: keyof PolicyDefinition,
): SettingSource {
  if (tableGet(args, argKey) !== undefined) return { from: 'argument', policy: null };
  if (policy !== undefined && policy.definition[policyKey] !== undefined)
    return { from: 'policy', policy: policy.name };
  return NO_POLICY_SOURCE;
}

/** A limit (the smaller of argument and policy wins): where its value came from. */
function limitSource(
  args: FieldTable,
  argKey: string,
  policy: PolicyRecord | undefined,
  policyKey: keyof PolicyDefinition,
  value: number | undefined,
): SettingSource {
  const byArgument = tableGet(args, argKey) !== undefined;
  const policyValue = policy?.definition[policyKey];
  const byPolicy = policy !== undefined && policyValue !== undefined;
  if (byArgument && byPolicy) return { from: 'smaller_of_both', policy: policy.name };
  if (byPolicy) return { from: 'policy', policy: policy.name };
  if (byArgument || value !== undefined) return { from: 'argument', policy: null };
  return NO_POLICY_SOURCE;
}

function setting<T>(value: T | undefined, source: SettingSource): Setting<T> {
  return { value: value ?? null, source };
}

// ------------------------------------------------------------------------------ triggers

interface TriggerInfo {
  readonly trigger: Trigger;
  readonly when: string;
}

function triggerOf(reason: DeadLetterReason, config: QueueConfig): TriggerInfo {
  switch (reason) {
    case 'rejected':
      return { trigger: 'consumer', when: 'a consumer rejects or nacks a message with requeue=false' };
    case 'expired':
      return config.messageTtl !== undefined
        ? {
            trigger: 'queue',
            when: `a message stays ready longer than the queue's message TTL (${config.messageTtl} ms) or its own expiration`,
          }
        : { trigger: 'publisher', when: 'a message published with an expiration stays ready longer than it' };
    case 'maxlen': {
      const limits = lengthLimitsText(config);
      if (limits === undefined) return { trigger: 'never', when: 'the queue has no length limit' };
      if (config.overflow === 'drop-head')
        return {
          trigger: 'queue',
          when: `the queue is over ${limits}: the oldest ready messages are dropped`,
        };
      if (config.overflow === 'reject-publish-dlx')
        return {
          trigger: 'queue',
          when: `a publish arrives while the queue is at ${limits}: it is refused (the publisher gets a nack) and dead-lettered`,
        };
      return {
        trigger: 'never',
        when: `overflow reject-publish refuses publishes at ${limits} (the publisher gets a nack): nothing is dead-lettered`,
      };
    }
    case 'delivery_limit':
      return config.deliveryLimit !== undefined
        ? {
            trigger: 'queue',
            when: `a message comes back (rejected or nacked with requeue, or its consumer went away) more than ${config.deliveryLimit} times`,
          }
        : { trigger: 'never', when: 'the queue has no delivery limit' };
  }
}

function lengthLimitsText(config: QueueConfig): string | undefined {
  const parts: string[] = [];
  if (config.maxLength !== undefined) parts.push(`${config.maxLength} messages`);
  if (config.maxLengthBytes !== undefined) parts.push(`${config.maxLengthBytes} bytes`);
  return parts.length === 0 ? undefined : parts.join(' or ');
}

// ------------------------------------------------------------------------------ routing

const WILDCARD = /(^|\.)[*#](\.|$)/;

/** Whether a headers exchange is reachable from `exchange` through exchange-to-exchange bindings. */
function reachesHeadersExchange(view: TopologyView, vhost: string, exchange: string): boolean {
  const bindings = view.bindings(vhost);
  const seen = new Set<string>([exchange]);
  const todo = [exchange];
  for (let name = todo.pop(); name !== undefined; name = todo.pop()) {
    if (view.exchange(vhost, name)?.type === 'headers') return true;
    for (const b of bindings) {
      if (b.source === name && b.destinationKind === 'exchange' && !seen.has(b.destination)) {
        seen.add(b.destination);
        todo.push(b.destination);
      }
    }
  }
  return false;
}

/** The key sets messages arrive at `queue` with (see the module comment). */
function arrivalKeys(view: TopologyView, queue: QueueRecord): Omit<DeadLetterRoute, 'queues'>[] {
  const out: Omit<DeadLetterRoute, 'queues'>[] = [
    { keys: [queue.name], key_source: 'default_exchange', via: { exchange: '', binding_key: queue.name } },
  ];
  const seen = new Set<string>();
  for (const b of view.bindings(queue.vhost)) {
    if (b.destinationKind !== 'queue' || b.destination !== queue.name) continue;
    const id = `${b.source}\u0000${b.routingKey}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const type = view.exchange(queue.vhost, b.source)?.type;
    const exact = type === 'direct' || (type === 'topic' && !WILDCARD.test(b.routingKey));
    out.push({
      keys: exact ? [b.routingKey] : null,
      key_source: exact ? 'binding' : 'binding_pattern',
      via: { exchange: b.source, binding_key: b.routingKey },
    });
  }
  return out;
}

/** The queues `exchange` routes `keys` to, sorted (null when the keys are not known). */
function routeQueues(
  view: TopologyView,
  vhost: string,
  exchange: string,
  keys: readonly string[] | null,
  keyIndependent: boolean,
): string[] | null {
  if (keys === null && !keyIndependent) return null;
  // A fanout DLX routes whatever the key: any stands for all.
  return [...view.route(vhost, exchange, keys ?? [''])].sort();
}

interface QueueDeadLettering {
  readonly record: QueueRecord;
  readonly config: QueueConfig;
  readonly dlxExists: boolean;
}

function deadLetteringOf(view: TopologyView, record: QueueRecord): QueueDeadLettering {
  const config = effectiveQueueConfig(record, view.policyFor(record.vhost, 'queue', record.name)).config;
  const dlx = config.deadLetterExchange;
  return {
    record,
    config,
    dlxExists: dlx !== undefined && (dlx === '' || view.exchange(record.vhost, dlx) !== undefined),
  };
}

/** Where copies from `q` carrying `keys` (null: unknown) go: their next keys and target queues. */
function nextHop(
  view: TopologyView,
  q: QueueDeadLettering,
  keys: readonly string[] | null,
): { keys: readonly string[] | null; targets: readonly string[] } {
  const { config, record } = q;
  const dlx = config.deadLetterExchange;
  if (dlx === undefined || !q.dlxExists) return { keys, targets: [] };
  const nextKeys = config.deadLetterRoutingKey !== undefined ? [config.deadLetterRoutingKey] : keys;
  const fanout = view.exchange(record.vhost, dlx)?.type === 'fanout';
  return { keys: nextKeys, targets: routeQueues(view, record.vhost, dlx, nextKeys, fanout) ?? [] };
}

// ------------------------------------------------------------------------------ cycles

interface CycleSearch {
  readonly cycles: DeadLetterCycle[];
  truncated: boolean;
  paths: number;
}

/**
 * Follow copies of a message leaving `start` for `reason`, with each of the start's key sets,
 * through the targets' own dead-lettering, recording every cycle closed.
 */
function findCycles(
  view: TopologyView,
  start: QueueDeadLettering,
  reason: DeadLetterReason,
  startKeys: readonly (readonly string[] | null)[],
): { cycles: DeadLetterCycle[]; truncated: boolean } {
  const search: CycleSearch = { cycles: [], truncated: false, paths: 0 };
  const cache = new Map<string, QueueDeadLettering | undefined>([[start.record.name, start]]);
  const lookup = (name: string): QueueDeadLettering | undefined => {
    if (!cache.has(name)) {
      const record = view.queue(start.record.vhost, name);
      cache.set(name, record === undefined ? undefined : deadLetteringOf(view, record));
    }
    return cache.get(name);
  };
  const found = new Set<string>();
  const walk = (path: PathHop[], keys: readonly string[] | null): void => {
    if (search.paths >= MAX_PATHS) {
      search.truncated = true;
      return;
    }
    search.paths++;
    const last = path[path.length - 1] as PathHop;
    const from = lookup(last.queue);
    if (from === undefined) return;
    const hop = nextHop(view, from, keys);
    for (const target of hop.targets) {
      const at = path.findIndex((h) => h.queue === target);
      if (at >= 0) {
        const cycle = path.slice(at);
        const id = `${cycle.map((h) => `${h.queue}/${h.reason}`).join('>')}>${target}`;
        if (!found.has(id)) {
          found.add(id);
          search.cycles.push({
            path: cycle,
            closes_at: target,
            dropped: cycle.every((h) => h.reason !== 'rejected'),
          });
        }
        continue;
      }
      if (path.length >= MAX_PATH_QUEUES) {
        search.truncated = true;
        continue;
      }
      const next = lookup(target);
      if (next === undefined || next.config.deadLetterExchange === undefined) continue;
      for (const r of DEAD_LETTER_REASONS) {
        if (triggerOf(r, next.config).trigger === 'never') continue;
        walk([...path, { queue: target, reason: r }], hop.keys);
      }
    }
  };
  for (const keys of startKeys) walk([{ queue: start.record.name, reason }], keys);
  return { cycles: search.cycles, truncated: search.truncated };
}

// ------------------------------------------------------------------------------ the explanation

/** Explain the dead-lettering of queue `name` in `vhost`; `ExplainQueueNotFoundError` if there is none. */
export function explainDeadLettering(view: TopologyView, vhost: string, name: string): DeadLetterExplanation {
  const record = view.queue(vhost, name);
  if (record === undefined) throw new ExplainQueueNotFoundError(vhost, name);
  const policy = view.policyFor(vhost, 'queue', name);
  const self = deadLetteringOf(view, record);
  const { config } = self;
  const args = record.arguments;
  const dlx = config.deadLetterExchange;
  const dlk = config.deadLetterRoutingKey;
  const dlxRecord = dlx === undefined || dlx === '' ? undefined : view.exchange(vhost, dlx);
  const dlxType: ExchangeType | null = dlx === '' ? 'direct' : (dlxRecord?.type ?? null);
  const effective = dlx === undefined ? 'none' : config.deadLetterStrategy;

  // Routes: the DLK, or each set of keys messages arrive with.
  const headers =
    dlx !== undefined && dlx !== '' && self.dlxExists && reachesHeadersExchange(view, vhost, dlx);
  const fanout = dlxType === 'fanout';
  let routes: DeadLetterRoute[] = [];
  if (dlx !== undefined) {
    const sources: Omit<DeadLetterRoute, 'queues'>[] =
      dlk !== undefined
        ? [{ keys: [dlk], key_source: 'dead_letter_routing_key', via: null }]
        : arrivalKeys(view, record);
    const queuesFor = (keys: readonly string[] | null): string[] | null => {
      if (!self.dlxExists) return [];
      if (headers) return null;
      return routeQueues(view, vhost, dlx, keys, fanout);
    };
    routes = sources.map((s) => ({ ...s, queues: queuesFor(s.keys) }));
  }
  const known = routes.filter((r) => r.queues !== null);
  const routesNowhere =
    self.dlxExists && !headers && known.length > 0 && known.every((r) => r.queues?.length === 0);
  const someNowhere =
    self.dlxExists && !headers && !routesNowhere && known.some((r) => r.queues?.length === 0);
  const targets = new Set<string>();
  for (const r of known) for (const q of r.queues ?? []) targets.add(q);

  const warnings: ExplainWarning[] = [];
  const triggering = DEAD_LETTER_REASONS.filter((r) => triggerOf(r, config).trigger !== 'never');
  const reasons: ReasonExplanation[] = DEAD_LETTER_REASONS.map((reason) => {
    const { trigger, when } = triggerOf(reason, config);
    const canTrigger = trigger !== 'never';
    let outcome: ReasonExplanation['outcome'];
    let whatHappens: string;
    if (!canTrigger) {
      outcome = 'not_applicable';
      whatHappens = `cannot happen: ${when}`;
    } else if (dlx === undefined) {
      outcome = 'dropped';
      whatHappens = 'dropped: the queue has no dead-letter exchange';
    } else if (!self.dlxExists || routesNowhere) {
      const why = self.dlxExists
        ? `'${dlx}' routes it nowhere`
        : `the dead-letter exchange '${dlx}' does not exist`;
      outcome = effective === 'at-least-once' ? 'held' : 'dropped';
      whatHappens =
        effective === 'at-least-once'
          ? `held in the queue, pending (at-least-once): ${why}; retried until it routes, and publishes are refused once too many wait`
          : `lost (at-most-once): ${why}`;
    } else {
      outcome = 'dead_lettered';
      const to =
        dlk !== undefined ? `with key '${dlk}'` : "with the message's own routing keys (incl. CC and BCC)";
      whatHappens = `dead-lettered ${effective} to '${dlx === '' ? '(default exchange)' : dlx}' ${to}`;
    }
    // With a DLK the copy's keys are the DLK whatever it arrived with: one walk is enough.
    const startKeys = dlk !== undefined ? [null] : routes.map((r) => r.keys);
    const search =
      outcome === 'dead_lettered'
        ? findCycles(view, self, reason, startKeys)
        : { cycles: [], truncated: false };
    return {
      reason,
      can_trigger: canTrigger,
      trigger,
      when,
      outcome,
      what_happens: whatHappens,
      cycles: search.cycles,
      cycles_truncated: search.truncated,
    };
  });

  // ---- warnings
  if (dlx === undefined) {
    if (triggering.length > 0)
      warnings.push({
        code: 'no_dead_letter_exchange',
        severity: 'info',
        reasons: triggering,
        message: `no dead-letter exchange: messages removed for ${triggering.join(', ')} are dropped`,
      });
  } else if (!self.dlxExists) {
    warnings.push({
      code: 'dead_letter_exchange_missing',
      severity: 'error',
      reasons: triggering,
      message:
        effective === 'at-least-once'
          ? `the dead-letter exchange '${dlx}' does not exist: dead-lettered messages wait in the queue (at-least-once) and publishes are refused once too many wait; declare it`
          : `the dead-letter exchange '${dlx}' does not exist: dead-lettered messages are dropped (at-most-once); declare it`,
    });
  } else if (routesNowhere) {
    warnings.push({
      code: 'dead_letter_exchange_routes_nowhere',
      severity: 'error',
      reasons: triggering,
      message: `the dead-letter exchange '${dlx}' routes ${dlk !== undefined ? `key '${dlk}'` : 'the keys messages arrive here with'} to no queue: ${effective === 'at-least-once' ? 'dead-lettered messages wait in the queue until a binding appears' : 'dead-lettered messages are dropped'}`,
    });
  } else if (someNowhere) {
    const keys = known.filter((r) => r.queues?.length === 0).map((r) => `'${(r.keys ?? []).join("','")}'`);
    warnings.push({
      code: 'dead_letter_exchange_routes_nowhere_for_some_keys',
      severity: 'warning',
      reasons: triggering,
      message: `without a dead-letter routing key, messages that arrived with key ${keys.join(', ')} route nowhere from '${dlx}': ${effective === 'at-least-once' ? 'they wait in the queue' : 'they are dropped'}`,
    });
  }
  for (const r of reasons) {
    for (const cycle of r.cycles) {
      if (!cycle.dropped) continue;
      warnings.push({
        code: 'cycle_without_reject',
        severity: 'warning',
        reasons: [r.reason],
        message: `cycle without a rejection: ${cycle.path.map((h) => `${h.queue} (${h.reason})`).join(' -> ')} -> ${cycle.closes_at}: the copy is dropped when it reaches '${cycle.closes_at}' again`,
      });
    }
  }
  if (effective === 'at-most-once' && self.dlxExists && !routesNowhere && triggering.length > 0) {
    warnings.push({
      code: 'at_most_once_loss_possible',
      severity: 'warning',
      reasons: triggering,
      message:
        'at-most-once: copies are published without confirms and the message is forgotten at once; a copy is lost if a target queue is unavailable or refuses it (set dead-letter-strategy at-least-once to keep it until confirmed)',
    });
  }
  if (effective === 'at-least-once' && config.overflow !== 'reject-publish') {
    warnings.push({
      code: 'at_least_once_overflow',
      severity: 'info',
      reasons: [],
      message: `at-least-once with overflow ${config.overflow}: Styx keeps it at-least-once, but RabbitMQ would fall back to at-most-once (its at-least-once needs overflow reject-publish)`,
    });
  }
  if (dlx !== undefined && self.dlxExists) {
    for (const target of [...targets].sort()) {
      const rec = view.queue(vhost, target);
      const t = rec === undefined ? undefined : deadLetteringOf(view, rec);
      if (t === undefined || t.config.deadLetterExchange !== undefined) continue;
      const losses: string[] = [];
      const limits = lengthLimitsText(t.config);
      if (limits !== undefined && t.config.overflow === 'drop-head')
        losses.push(`drops its oldest messages over ${limits}`);
      if (t.config.messageTtl !== undefined) losses.push(`expires messages after ${t.config.messageTtl} ms`);
      if (losses.length > 0)
        warnings.push({
          code: 'target_drops_silently',
          severity: 'warning',
          reasons: triggering,
          message: `target queue '${target}' ${losses.join(' and ')} with no dead-letter exchange of its own: dead-lettered messages can be lost there`,
        });
    }
  }
  if (config.expires !== undefined) {
    warnings.push({
      code: 'queue_expiry_discards_messages',
      severity: 'info',
      reasons: [],
      message: `the queue expires after ${config.expires} ms unused; its messages are then deleted, not dead-lettered`,
    });
  }

  const limit = (
    argKey: string,
    policyKey: keyof PolicyDefinition,
    value: number | undefined,
  ): Setting<number> => setting(value, limitSource(args, argKey, policy, policyKey, value));
  return {
    vhost,
    queue: name,
    durable: record.durable,
    policy: policy?.name ?? null,
    dead_letter_exchange: {
      ...setting(dlx, choiceSource(args, 'x-dead-letter-exchange', policy, 'dead-letter-exchange')),
      exists: dlx === undefined ? null : self.dlxExists,
      type: dlxType,
    },
    dead_letter_routing_key: setting(
      dlk,
      choiceSource(args, 'x-dead-letter-routing-key', policy, 'dead-letter-routing-key'),
    ),
    strategy: {
      // Its default depends on durability: at-least-once for durable queues.
      ...setting(
        config.deadLetterStrategy,
        choiceSource(args, 'x-dead-letter-strategy', policy, 'dead-letter-strategy'),
      ),
      effective,
      rabbitmq_needs_reject_publish: effective === 'at-least-once' && config.overflow !== 'reject-publish',
    },
    overflow: setting(config.overflow, choiceSource(args, 'x-overflow', policy, 'overflow')),
    limits: {
      message_ttl: limit('x-message-ttl', 'message-ttl', config.messageTtl),
      max_length: limit('x-max-length', 'max-length', config.maxLength),
      max_length_bytes: limit('x-max-length-bytes', 'max-length-bytes', config.maxLengthBytes),
      delivery_limit: limit('x-delivery-limit', 'delivery-limit', config.deliveryLimit),
      expires: limit('x-expires', 'expires', config.expires),
    },
    routing: {
      uses: dlx === undefined ? 'none' : dlk !== undefined ? 'dead_letter_routing_key' : 'message_keys',
      depends_on_headers: headers,
      routes,
    },
    reasons,
    warnings,
  };
}
