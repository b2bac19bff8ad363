/**
 * The metadata store as a deterministic state machine: vhosts with their exchanges, queues,
 * bindings and policies; users; permissions. It runs on a ReplicatedLog (one group for the whole
 * cluster), and its state is also the node's read cache: accessors answer from memory, the router
 * walks the exchange indexes kept here.
 *
 * `apply` is pure: no I/O, clock or randomness, and it never throws on bad input — a refused
 * command is an error reply with an AMQP code and RabbitMQ's wording. Rules follow RabbitMQ 3.x:
 *
 * - Redeclares must be equivalent. Exchanges compare type, durable, auto_delete, internal and the
 *   `alternate-exchange` argument; queues compare exclusivity (405 RESOURCE_LOCKED, as RabbitMQ's
 *   strict `check_exclusive_access`), durable, auto_delete, then the arguments in
 *   QUEUE_EQUIVALENCE_KEYS with integer widths treated as one type. Other arguments may differ.
 * - Client-chosen names starting with 'amq.' are 403. For exchanges RabbitMQ checks this only when
 *   creating, so an equivalent redeclare of 'amq.direct' succeeds; for queues always (except names
 *   the node generated, `serverNamed`).
 * - Deleting a missing exchange or queue succeeds (`removed: false`), as RabbitMQ's delete-ok;
 *   unbinding a missing binding likewise. Binding or unbinding with a missing end is 404.
 * - Names and routing keys are at most 255 UTF-8 bytes (406, see names.ts).
 * - Policies are validated whole (policy-definition.ts): a bad pattern, apply-to, priority or
 *   definition is 406 with the reason; clearing a missing policy is 404 (RabbitMQ's "Parameter
 *   does not exist"). Which policy applies to a resource: policy-match.ts.
 * - The cluster's members and forgotten nodes: cluster-membership.ts.
 */

import type { FieldTable } from '@styx/client/wire';
import { ReplyCode, tableGet } from '@styx/client/wire';
import type { EntryMeta, StateMachine } from '@styx/raft';
import { createRoutingIndex } from '../router/create-index.ts';
import type { HeadersPattern } from '../router/headers-match.ts';
import { parseHeadersPattern } from '../router/headers-match.ts';
import type { ClusterNodeRow } from './cluster-membership.ts';
import { ClusterMembership } from './cluster-membership.ts';
import { checkCommandShape } from './command-shape.ts';
import { FeatureFlagTable } from './feature-flag-table.ts';
import {
  argumentsEquivalent,
  canonicalTableKey,
  describeArgument,
  fieldJsonReplacer,
  fieldJsonReviver,
  plainTable,
} from './field-values.ts';
import { checkLength, checkNotReserved } from './names.ts';
import { validatePolicyDefinition } from './policy-definition.ts';
import { selectPolicy } from './policy-match.ts';
import { QUEUE_EQUIVALENCE_KEYS, queueConfigFromArguments } from './queue-arguments.ts';
import { RedriveLedger } from './redrive-ledger.ts';
import type { RedriveRecord } from './redrive-types.ts';
import {
  checkExclusiveAccess,
  defaultExchangeRefused,
  error,
  noSuchResource,
  noSuchUser,
  noSuchVhost,
  ok,
  resourceText,
} from './replies.ts';
import type { BindingEntry, ExchangeNode, QueueNode, VhostNode } from './state.ts';
import type {
  BindCommand,
  BindingRecord,
  ClusterNodeRecord,
  DestinationKind,
  ExchangeRecord,
  ExchangeType,
  MetadataCommand,
  MetadataError,
  MetadataReply,
  PermissionRecord,
  PolicyApplyTo,
  PolicyDefinition,
  PolicyRecord,
  QueueRecord,
  UserRecord,
  VhostRecord,
} from './types.ts';
import { EXCHANGE_TYPES, POLICY_APPLY_TO } from './types.ts';

export type * from './types.ts';

/** The exchanges every vhost is created with (RabbitMQ's standard set), all durable. */
export const STANDARD_EXCHANGES: readonly { readonly name: string; readonly type: ExchangeType }[] = [
  { name: '', type: 'direct' },
  { name: 'amq.direct', type: 'direct' },
  { name: 'amq.fanout', type: 'fanout' },
  { name: 'amq.topic', type: 'topic' },
  { name: 'amq.headers', type: 'headers' },
  { name: 'amq.match', type: 'headers' },
];

/** Exchange arguments compared on a redeclare (RabbitMQ compares only this one). */
const EXCHANGE_EQUIVALENCE_KEYS: readonly string[] = ['alternate-exchange'];

const EMPTY_TABLE: FieldTable = Object.freeze({ entries: [] }) as unknown as FieldTable;

/**
 * Snapshot format version. Version 2 added policies (`policies` in each vhost), version 3 the
 * cluster's members (`clusterNodes`, `forgottenNodes`); restore also reads versions 1 and 2 (no
 * policies, no members) and refuses others.
 */
/** 4: queue rows may carry their replicas (`members`). */
const SNAPSHOT_VERSION = 4;
const READABLE_SNAPSHOT_VERSIONS: readonly number[] = [1, 2, 3, 4];

/** A snapshot that cannot be restored: corrupt storage or a newer format. Never expected. */
export class SnapshotFormatError extends Error {
  readonly code = 'METADATA_SNAPSHOT_FORMAT';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SnapshotFormatError';
  }
}

/** What a fresh node proposes: vhost '/', the default user as administrator with full permissions there. */
export function bootstrapCommands(defaults: {
  readonly user?: string;
  readonly passwordHash: string;
  readonly vhost?: string;
}): MetadataCommand[] {
  const user = defaults.user ?? 'guest';
  const vhost = defaults.vhost ?? '/';
  return [
    { type: 'addVhost', name: vhost },
    { type: 'putUser', name: user, passwordHash: defaults.passwordHash, tags: ['administrator'] },
    { type: 'setPermissions', user, vhost, configure: '.*', write: '.*', read: '.*' },
  ];
}

function isExchangeType(s: string): s is ExchangeType {
  return (EXCHANGE_TYPES as readonly string[]).includes(s);
}

function isPolicyApplyTo(s: string): s is PolicyApplyTo {
  return (POLICY_APPLY_TO as readonly string[]).includes(s);
}

function malformedTable(what: string): MetadataError {
  return error(ReplyCode.SYNTAX_ERROR, `malformed ${what}: a field value carries no type member`);
}

/** RabbitMQ's `assert_field_equivalence` message for a flag or the exchange type. */
function inequivalentField(
  kind: 'exchange' | 'queue',
  vhost: string,
  name: string,
  field: string,
  current: unknown,
  received: unknown,
): MetadataError {
  return error(
    ReplyCode.PRECONDITION_FAILED,
    `inequivalent arg '${field}' for ${resourceText(kind, vhost, name)}: received '${String(received)}' but current is '${String(current)}'`,
  );
}

/** RabbitMQ's `assert_args_equivalence` over `keys`; undefined when equivalent. */
function inequivalentArgs(
  kind: 'exchange' | 'queue',
  vhost: string,
  name: string,
  current: FieldTable,
  received: FieldTable,
  keys: readonly string[],
): MetadataError | undefined {
  for (const key of keys) {
    const a = tableGet(current, key);
    const b = tableGet(received, key);
    if (argumentsEquivalent(a, b)) continue;
    // A queue declared without a type is a classic queue (RabbitMQ special-cases this pair).
    if (key === 'x-queue-type' && isClassicOrNone(a) && isClassicOrNone(b)) continue;
    return error(
      ReplyCode.PRECONDITION_FAILED,
      `inequivalent arg '${key}' for ${resourceText(kind, vhost, name)}: received ${describeArgument(b)} but current is ${describeArgument(a)}`,
    );
  }
  return undefined;
}

function isClassicOrNone(v: ReturnType<typeof tableGet>): boolean {
  return v === undefined || v.longStr === 'classic' || v.shortStr === 'classic';
}

function bindingId(
  source: string,
  kind: DestinationKind,
  destination: string,
  key: string,
  args: FieldTable,
): string {
  return JSON.stringify([source, kind, destination, key, canonicalTableKey(args)]);
}

export class MetadataMachine implements StateMachine<MetadataCommand, MetadataReply> {
  private readonly vhostNodes = new Map<string, VhostNode>();
  private readonly usersByName = new Map<string, UserRecord>();
  /** user → vhost → permissions. */
  private readonly permissionsByUser = new Map<string, Map<string, PermissionRecord>>();
  /** connection id → its exclusive queues (one connection uses one vhost). */
  private readonly exclusiveByOwner = new Map<string, Set<QueueNode>>();
  private readonly membership = new ClusterMembership();
  private readonly redrives = new RedriveLedger();
  private readonly featureFlags = new FeatureFlagTable();

  apply(command: MetadataCommand, meta?: EntryMeta): MetadataReply {
    const bad = checkCommandShape(command);
    if (bad !== undefined) return bad;
    switch (command.type) {
      case 'startRedrive':
      case 'updateRedrive':
      case 'claimRedrive':
      case 'cancelRedrive':
        return this.redrives.apply(command, meta?.ts ?? 0);
      case 'addVhost':
        return this.addVhost(command.name);
      case 'deleteVhost':
        return this.deleteVhost(command.name);
      case 'putUser':
        return this.putUser(command.name, command.passwordHash, command.tags);
      case 'deleteUser':
        return this.deleteUser(command.name);
      case 'setPermissions':
        return this.setPermissions(command);
      case 'clearPermissions':
        return this.clearPermissions(command.user, command.vhost);
      case 'declareExchange':
        return this.declareExchange(command);
      case 'deleteExchange':
        return this.deleteExchange(command.vhost, command.name, command.ifUnused);
      case 'declareQueue':
        return this.declareQueue(command);
      case 'deleteQueue':
        return this.deleteQueue(command);
      case 'setQueueMembers':
        return this.setQueueMembers(command);
      case 'bind':
        return this.bind(command);
      case 'unbind':
        return this.unbind(command);
      case 'deleteExclusive':
        return this.deleteExclusive(command.connectionId);
      case 'setPolicy':
        return this.setPolicy(command);
      case 'clearPolicy':
        return this.clearPolicy(command.vhost, command.name);
      case 'addClusterNode':
        return this.membership.add(command, meta?.ts ?? 0);
      case 'forgetClusterNode':
        return this.membership.forget(command.node);
      case 'enableFeatureFlags':
        return this.featureFlags.enable(command.names);
      case 'setNodeMaintenance':
        return this.membership.setDrained(command.node, command.drained);
    }
  }

  // ------------------------------------------------------------------------------------ accessors

  vhost(name: string): VhostRecord | undefined {
    return this.vhostNodes.get(name)?.record;
  }

  vhosts(): VhostRecord[] {
    return Array.from(this.vhostNodes.values(), (v) => v.record);
  }

  exchange(vhost: string, name: string): ExchangeRecord | undefined {
    return this.vhostNodes.get(vhost)?.exchanges.get(name)?.record;
  }

  /** The exchanges of a vhost (empty for an unknown vhost), the standard ones included. */
  exchanges(vhost: string): ExchangeRecord[] {
    const vh = this.vhostNodes.get(vhost);
    return vh === undefined ? [] : Array.from(vh.exchanges.values(), (x) => x.record);
  }

  queue(vhost: string, name: string): QueueRecord | undefined {
    return this.vhostNodes.get(vhost)?.queues.get(name)?.record;
  }

  /** Every queue, or those of one vhost. */
  queues(vhost?: string): QueueRecord[] {
    const out: QueueRecord[] = [];
    for (const vh of this.vhostNodes.values()) {
      if (vhost !== undefined && vh.record.name !== vhost) continue;
      for (const q of vh.queues.values()) out.push(q.record);
    }
    return out;
  }

  /**
   * The explicit bindings of a vhost, in creation order. The default exchange's implicit bindings
   * (one per queue, keyed by its name) are not listed.
   */
  bindings(vhost: string): BindingRecord[] {
    const vh = this.vhostNodes.get(vhost);
    return vh === undefined ? [] : Array.from(vh.bindings.values(), (b) => b.record);
  }

  user(name: string): UserRecord | undefined {
    return this.usersByName.get(name);
  }

  users(): UserRecord[] {
    return Array.from(this.usersByName.values());
  }

  permissions(user: string, vhost: string): PermissionRecord | undefined {
    return this.permissionsByUser.get(user)?.get(vhost);
  }

  /** Every permission entry. */
  allPermissions(): PermissionRecord[] {
    const out: PermissionRecord[] = [];
    for (const byVhost of this.permissionsByUser.values()) for (const p of byVhost.values()) out.push(p);
    return out;
  }

  /** The policies of a vhost in creation order (empty for an unknown vhost). */
  policies(vhost: string): PolicyRecord[] {
    const vh = this.vhostNodes.get(vhost);
    return vh === undefined ? [] : Array.from(vh.policies.values());
  }

  policy(vhost: string, name: string): PolicyRecord | undefined {
    return this.vhostNodes.get(vhost)?.policies.get(name);
  }

  /**
   * The policy that applies to the queue or exchange `name` in `vhost`: the highest priority among
   * those matching, ties to the name that sorts first (see policy-match.ts). The resource need not
   * exist: this answers for a name.
   */
  policyFor(vhost: string, kind: 'queue' | 'exchange', name: string): PolicyRecord | undefined {
    const vh = this.vhostNodes.get(vhost);
    return vh === undefined || vh.policies.size === 0
      ? undefined
      : selectPolicy(vh.policies.values(), kind, name);
  }

  /** The cluster's members, oldest first (empty until the cluster layer records this node). */
  clusterNodes(): ClusterNodeRecord[] {
    return this.membership.nodes();
  }

  /** The member with this node id, else the member with this name. */
  clusterNode(idOrName: string): ClusterNodeRecord | undefined {
    return this.membership.node(idOrName);
  }

  /** Whether the member with this node id is in maintenance mode (`styx ctl drain`). */
  isNodeDrained(id: string): boolean {
    return this.membership.isDrained(id);
  }

  /** The feature flags enabled cluster-wide (cluster/feature-flags.ts), in the order enabled. */
  enabledFeatureFlags(): ReadonlySet<string> {
    return this.featureFlags.enabled();
  }

  /** The redrive audit records, newest first (at most `MAX_REDRIVE_RECORDS`). */
  redriveRecords(): RedriveRecord[] {
    return this.redrives.records();
  }

  redrive(id: string): RedriveRecord | undefined {
    return this.redrives.record(id);
  }

  /** Whether this node id or peer id belonged to a member removed by forgetClusterNode. */
  isForgotten(idOrPeerId: string): boolean {
    return this.membership.isForgotten(idOrPeerId);
  }

  /** The node ids and peer ids of forgotten members, in the order they were forgotten. */
  forgottenNodes(): string[] {
    return this.membership.forgotten();
  }

  /** The vhost's graph, for the router. Internal: callers must not modify it. */
  vhostNode(name: string): VhostNode | undefined {
    return this.vhostNodes.get(name);
  }

  // --------------------------------------------------------------------------------------- vhosts

  private addVhost(name: string): MetadataReply {
    if (this.vhostNodes.has(name)) return ok();
    const tooLong = checkLength('vhost name', name);
    if (tooLong !== undefined) return tooLong;
    this.addStandardExchanges(this.createVhost(name));
    return ok({ created: true });
  }

  /**
   * An empty vhost node. The standard exchanges are added by addVhost, not here, since restore
   * lists them among the vhost's exchanges.
   */
  private createVhost(name: string): VhostNode {
    const vh: VhostNode = {
      record: { name },
      exchanges: new Map(),
      queues: new Map(),
      bindings: new Map(),
      policies: new Map(),
    };
    this.vhostNodes.set(name, vh);
    return vh;
  }

  private addStandardExchanges(vh: VhostNode): void {
    for (const { name, type } of STANDARD_EXCHANGES) {
      this.createExchange(vh, {
        vhost: vh.record.name,
        name,
        type,
        durable: true,
        autoDelete: false,
        internal: false,
        arguments: EMPTY_TABLE,
      });
    }
  }

  private deleteVhost(name: string): MetadataReply {
    const vh = this.vhostNodes.get(name);
    if (vh === undefined) return noSuchVhost(name);
    const deletedQueues: QueueRecord[] = [];
    for (const q of vh.queues.values()) {
      deletedQueues.push(q.record);
      this.forgetExclusive(q);
    }
    const deletedExchanges = Array.from(vh.exchanges.values(), (x) => x.record);
    this.vhostNodes.delete(name);
    for (const [user, byVhost] of this.permissionsByUser) {
      if (byVhost.delete(name) && byVhost.size === 0) this.permissionsByUser.delete(user);
    }
    return ok({ removed: true, deletedQueues, deletedExchanges });
  }

  // ------------------------------------------------------------------------- users & permissions

  private putUser(name: string, passwordHash: string, tags: readonly string[]): MetadataReply {
    const created = !this.usersByName.has(name);
    this.usersByName.set(name, { name, passwordHash, tags: Object.freeze(tags.slice()) });
    return ok({ created });
  }

  private deleteUser(name: string): MetadataReply {
    if (!this.usersByName.delete(name)) return noSuchUser(name);
    this.permissionsByUser.delete(name);
    return ok({ removed: true });
  }

  private setPermissions(c: Extract<MetadataCommand, { type: 'setPermissions' }>): MetadataReply {
    if (!this.usersByName.has(c.user)) return noSuchUser(c.user);
    if (!this.vhostNodes.has(c.vhost)) return noSuchVhost(c.vhost);
    for (const kind of ['configure', 'write', 'read'] as const) {
      try {
        new RegExp(c[kind]);
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        return error(
          ReplyCode.PRECONDITION_FAILED,
          `invalid ${kind} regular expression '${c[kind]}': ${why}`,
        );
      }
    }
    let byVhost = this.permissionsByUser.get(c.user);
    if (byVhost === undefined) {
      byVhost = new Map();
      this.permissionsByUser.set(c.user, byVhost);
    }
    const created = !byVhost.has(c.vhost);
    byVhost.set(c.vhost, {
      user: c.user,
      vhost: c.vhost,
      configure: c.configure,
      write: c.write,
      read: c.read,
    });
    return ok({ created });
  }

  private clearPermissions(user: string, vhost: string): MetadataReply {
    if (!this.usersByName.has(user)) return noSuchUser(user);
    if (!this.vhostNodes.has(vhost)) return noSuchVhost(vhost);
    const byVhost = this.permissionsByUser.get(user);
    const removed = byVhost?.delete(vhost) ?? false;
    if (byVhost?.size === 0) this.permissionsByUser.delete(user);
    return ok({ removed });
  }

  // ------------------------------------------------------------------------------------ exchanges

  private declareExchange(c: Extract<MetadataCommand, { type: 'declareExchange' }>): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    if (vh === undefined) return noSuchVhost(c.vhost);
    if (!isExchangeType(c.exchangeType)) {
      return error(ReplyCode.COMMAND_INVALID, `invalid exchange type '${c.exchangeType}'`);
    }
    if (c.name === '') return defaultExchangeRefused();
    const args = plainTable(c.arguments);
    if (args === undefined) return malformedTable('exchange arguments');
    const existing = vh.exchanges.get(c.name);
    if (existing !== undefined) {
      const x = existing.record;
      const fields = [
        ['type', x.type, c.exchangeType],
        ['durable', x.durable, c.durable],
        ['auto_delete', x.autoDelete, c.autoDelete],
        ['internal', x.internal, c.internal],
      ] as const;
      for (const [field, current, received] of fields) {
        if (current !== received)
          return inequivalentField('exchange', c.vhost, c.name, field, current, received);
      }
      const argsError = inequivalentArgs(
        'exchange',
        c.vhost,
        c.name,
        x.arguments,
        args,
        EXCHANGE_EQUIVALENCE_KEYS,
      );
      return argsError ?? ok({ exchange: x });
    }
    const refused = checkLength('exchange name', c.name) ?? checkNotReserved('exchange', c.name);
    if (refused !== undefined) return refused;
    const record: ExchangeRecord = {
      vhost: c.vhost,
      name: c.name,
      type: c.exchangeType,
      durable: c.durable,
      autoDelete: c.autoDelete,
      internal: c.internal,
      arguments: args,
    };
    this.createExchange(vh, record);
    return ok({ created: true, exchange: record });
  }

  private createExchange(vh: VhostNode, record: ExchangeRecord): ExchangeNode {
    const node: ExchangeNode = {
      kind: 'exchange',
      record,
      index: createRoutingIndex(record.type),
      outgoing: new Set(),
      incoming: new Set(),
    };
    vh.exchanges.set(record.name, node);
    return node;
  }

  private deleteExchange(vhost: string, name: string, ifUnused: boolean): MetadataReply {
    if (name === '') return defaultExchangeRefused();
    if (name.startsWith('amq.')) {
      return error(
        ReplyCode.ACCESS_REFUSED,
        `deletion of system ${resourceText('exchange', vhost, name)} not allowed`,
      );
    }
    const vh = this.vhostNodes.get(vhost);
    const x = vh?.exchanges.get(name);
    if (vh === undefined || x === undefined) return ok();
    if (ifUnused && x.outgoing.size > 0) {
      return error(ReplyCode.PRECONDITION_FAILED, `${resourceText('exchange', vhost, name)} in use`);
    }
    const deletedExchanges: ExchangeRecord[] = [];
    this.removeExchange(vh, x, deletedExchanges);
    return ok({ removed: true, deletedExchanges });
  }

  /** Removes an exchange and every binding touching it; cascades to auto-delete sources. */
  private removeExchange(vh: VhostNode, x: ExchangeNode, deleted: ExchangeRecord[]): void {
    vh.exchanges.delete(x.record.name);
    deleted.push(x.record);
    for (const entry of Array.from(x.outgoing)) this.unlinkBinding(vh, entry, deleted);
    for (const entry of Array.from(x.incoming)) this.unlinkBinding(vh, entry, deleted);
  }

  // --------------------------------------------------------------------------------------- queues

  private declareQueue(c: Extract<MetadataCommand, { type: 'declareQueue' }>): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    if (vh === undefined) return noSuchVhost(c.vhost);
    if (c.name === '') {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `queue name '' is reserved: the node generates a name for ''`,
      );
    }
    const refused =
      checkLength('queue name', c.name) ?? (c.serverNamed ? undefined : checkNotReserved('queue', c.name));
    if (refused !== undefined) return refused;
    const args = plainTable(c.arguments);
    if (args === undefined) return malformedTable('queue arguments');
    const parsed = queueConfigFromArguments(args, c.durable, c);
    if (!parsed.ok) return error(parsed.code, parsed.text);
    const existing = vh.queues.get(c.name);
    if (existing !== undefined) {
      const q = existing.record;
      const locked = checkExclusiveAccess(q, c.exclusiveOwner ?? undefined, true);
      if (locked !== undefined) return locked;
      if (q.durable !== c.durable)
        return inequivalentField('queue', c.vhost, c.name, 'durable', q.durable, c.durable);
      if (q.autoDelete !== c.autoDelete) {
        return inequivalentField('queue', c.vhost, c.name, 'auto_delete', q.autoDelete, c.autoDelete);
      }
      const argsError = inequivalentArgs('queue', c.vhost, c.name, q.arguments, args, QUEUE_EQUIVALENCE_KEYS);
      return argsError ?? ok({ queue: q });
    }
    const record: QueueRecord = {
      vhost: c.vhost,
      name: c.name,
      durable: c.durable,
      exclusiveOwner: c.exclusiveOwner ?? undefined,
      autoDelete: c.autoDelete,
      arguments: args,
      groupId: c.groupId,
      ...(c.node != null ? { node: c.node } : {}),
      ...(c.members != null && c.members.length > 0 ? { members: Object.freeze([...c.members]) } : {}),
      ...(c.founders != null && c.founders.length > 0 ? { founders: Object.freeze([...c.founders]) } : {}),
    };
    this.createQueue(vh, record);
    return ok({ created: true, queue: record });
  }

  private createQueue(vh: VhostNode, record: QueueRecord): QueueNode {
    const node: QueueNode = { kind: 'queue', record, incoming: new Set() };
    vh.queues.set(record.name, node);
    if (record.exclusiveOwner !== undefined) {
      let owned = this.exclusiveByOwner.get(record.exclusiveOwner);
      if (owned === undefined) {
        owned = new Set();
        this.exclusiveByOwner.set(record.exclusiveOwner, owned);
      }
      owned.add(node);
    }
    return node;
  }

  private setQueueMembers(c: Extract<MetadataCommand, { type: 'setQueueMembers' }>): MetadataReply {
    const q = this.vhostNodes.get(c.vhost)?.queues.get(c.name);
    if (q === undefined || q.record.groupId !== c.groupId) return ok();
    const members = [...new Set(c.members)];
    if (members.length === 0) {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `${resourceText('queue', c.vhost, c.name)}: no members left`,
      );
    }
    for (const id of members) {
      if (this.membership.node(id)?.id !== id) {
        return error(ReplyCode.PRECONDITION_FAILED, `node ${id} is not a cluster member`);
      }
    }
    q.record = { ...q.record, members: Object.freeze(members) };
    return ok({ queue: q.record });
  }

  private deleteQueue(c: Extract<MetadataCommand, { type: 'deleteQueue' }>): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    const q = vh?.queues.get(c.name);
    if (vh === undefined || q === undefined) return ok();
    if (c.groupId != null && c.groupId !== q.record.groupId) return ok();
    if (c.connectionId != null) {
      const locked = checkExclusiveAccess(q.record, c.connectionId);
      if (locked !== undefined) return locked;
    }
    if (c.ifUnused && c.consumers > 0) {
      return error(ReplyCode.PRECONDITION_FAILED, `${resourceText('queue', c.vhost, c.name)} in use`);
    }
    if (c.ifEmpty && c.messages > 0) {
      return error(ReplyCode.PRECONDITION_FAILED, `${resourceText('queue', c.vhost, c.name)} not empty`);
    }
    const deletedExchanges: ExchangeRecord[] = [];
    this.removeQueue(vh, q, deletedExchanges);
    return ok({ removed: true, deletedQueues: [q.record], deletedExchanges });
  }

  private deleteExclusive(connectionId: string): MetadataReply {
    const owned = this.exclusiveByOwner.get(connectionId);
    if (owned === undefined) return ok();
    const deletedQueues: QueueRecord[] = [];
    const deletedExchanges: ExchangeRecord[] = [];
    for (const q of Array.from(owned)) {
      const vh = this.vhostNodes.get(q.record.vhost) as VhostNode;
      this.removeQueue(vh, q, deletedExchanges);
      deletedQueues.push(q.record);
    }
    return ok({ removed: deletedQueues.length > 0, deletedQueues, deletedExchanges });
  }

  /** Removes a queue and its bindings; cascades to auto-delete exchanges left without bindings. */
  private removeQueue(vh: VhostNode, q: QueueNode, deletedExchanges: ExchangeRecord[]): void {
    for (const entry of Array.from(q.incoming)) this.unlinkBinding(vh, entry, deletedExchanges);
    vh.queues.delete(q.record.name);
    this.forgetExclusive(q);
  }

  private forgetExclusive(q: QueueNode): void {
    const owner = q.record.exclusiveOwner;
    if (owner === undefined) return;
    const owned = this.exclusiveByOwner.get(owner);
    if (owned?.delete(q) && owned.size === 0) this.exclusiveByOwner.delete(owner);
  }

  // ------------------------------------------------------------------------------------- bindings

  /** The two ends of a (un)bind, or the error RabbitMQ gives. */
  private bindingEnds(
    vh: VhostNode,
    c: BindCommand | Extract<MetadataCommand, { type: 'unbind' }>,
  ): { source: ExchangeNode; destination: ExchangeNode | QueueNode; args: FieldTable } | MetadataError {
    if (c.source === '' || (c.destinationKind === 'exchange' && c.destination === '')) {
      return defaultExchangeRefused();
    }
    const tooLong = checkLength('routing key', c.routingKey);
    if (tooLong !== undefined) return tooLong;
    const source = vh.exchanges.get(c.source);
    if (source === undefined) return noSuchResource('exchange', c.vhost, c.source);
    const destination =
      c.destinationKind === 'queue' ? vh.queues.get(c.destination) : vh.exchanges.get(c.destination);
    if (destination === undefined) return noSuchResource(c.destinationKind, c.vhost, c.destination);
    if (destination.kind === 'queue' && c.connectionId != null) {
      const locked = checkExclusiveAccess(destination.record, c.connectionId);
      if (locked !== undefined) return locked;
    }
    const args = plainTable(c.arguments);
    if (args === undefined) return malformedTable('binding arguments');
    return { source, destination, args };
  }

  private bind(c: BindCommand): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    if (vh === undefined) return noSuchVhost(c.vhost);
    const ends = this.bindingEnds(vh, c);
    if ('type' in ends) return ends;
    const id = bindingId(c.source, c.destinationKind, c.destination, c.routingKey, ends.args);
    if (vh.bindings.has(id)) return ok();
    let headers: HeadersPattern | undefined;
    if (ends.source.record.type === 'headers') {
      const parsed = parseHeadersPattern(ends.args);
      if (typeof parsed === 'string') return error(ReplyCode.PRECONDITION_FAILED, parsed);
      headers = parsed;
    }
    const record: BindingRecord = {
      vhost: c.vhost,
      source: c.source,
      destinationKind: c.destinationKind,
      destination: c.destination,
      routingKey: c.routingKey,
      arguments: ends.args,
    };
    this.linkBinding(vh, { id, record, source: ends.source, destination: ends.destination, headers });
    return ok({ created: true });
  }

  private unbind(c: Extract<MetadataCommand, { type: 'unbind' }>): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    if (vh === undefined) return noSuchVhost(c.vhost);
    const ends = this.bindingEnds(vh, c);
    if ('type' in ends) return ends;
    const entry = vh.bindings.get(
      bindingId(c.source, c.destinationKind, c.destination, c.routingKey, ends.args),
    );
    if (entry === undefined) return ok();
    const deletedExchanges: ExchangeRecord[] = [];
    this.unlinkBinding(vh, entry, deletedExchanges);
    return ok({ removed: true, deletedExchanges });
  }

  private linkBinding(vh: VhostNode, entry: BindingEntry): void {
    vh.bindings.set(entry.id, entry);
    entry.source.outgoing.add(entry);
    entry.source.index.add(entry);
    entry.destination.incoming.add(entry);
  }

  /**
   * Removes a binding from all four places; an auto-delete source left without bindings is
   * deleted in turn (and so on up the chain).
   */
  private unlinkBinding(vh: VhostNode, entry: BindingEntry, deletedExchanges: ExchangeRecord[]): void {
    if (!vh.bindings.delete(entry.id)) return;
    const source = entry.source;
    source.outgoing.delete(entry);
    source.index.remove(entry);
    entry.destination.incoming.delete(entry);
    if (
      source.record.autoDelete &&
      source.outgoing.size === 0 &&
      vh.exchanges.get(source.record.name) === source
    ) {
      this.removeExchange(vh, source, deletedExchanges);
    }
  }

  // ------------------------------------------------------------------------------------- policies

  private setPolicy(c: Extract<MetadataCommand, { type: 'setPolicy' }>): MetadataReply {
    const vh = this.vhostNodes.get(c.vhost);
    if (vh === undefined) return noSuchVhost(c.vhost);
    if (c.name === '')
      return error(ReplyCode.PRECONDITION_FAILED, 'Validation failed: a policy needs a name');
    const tooLong = checkLength('policy name', c.name);
    if (tooLong !== undefined) return tooLong;
    try {
      new RegExp(c.pattern);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `Validation failed: pattern '${c.pattern}' is not a valid regular expression: ${why}`,
      );
    }
    if (!isPolicyApplyTo(c.applyTo)) {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `Validation failed: apply-to '${c.applyTo}' is not one of ${POLICY_APPLY_TO.join(', ')}`,
      );
    }
    const definition = validatePolicyDefinition(c.definition);
    if ('type' in definition) return definition;
    const created = !vh.policies.has(c.name);
    vh.policies.set(c.name, {
      vhost: c.vhost,
      name: c.name,
      pattern: c.pattern,
      applyTo: c.applyTo,
      priority: c.priority,
      definition,
    });
    return ok({ created });
  }

  private clearPolicy(vhost: string, name: string): MetadataReply {
    const vh = this.vhostNodes.get(vhost);
    if (vh === undefined) return noSuchVhost(vhost);
    if (!vh.policies.delete(name))
      return error(ReplyCode.NOT_FOUND, `no policy '${name}' in vhost '${vhost}'`);
    return ok({ removed: true });
  }

  // ------------------------------------------------------------------------------------ snapshots

  /**
   * JSON of the whole state in insertion order (so a restored machine iterates, and snapshots
   * again, exactly as the original). Field tables keep their types; bytes are base64.
   */
  snapshot(): Uint8Array {
    const vhosts = Array.from(this.vhostNodes.values(), (vh) => ({
      name: vh.record.name,
      exchanges: Array.from(vh.exchanges.values(), ({ record: x }) => [
        x.name,
        x.type,
        x.durable,
        x.autoDelete,
        x.internal,
        x.arguments,
      ]),
      queues: Array.from(vh.queues.values(), ({ record: q }) => [
        q.name,
        q.durable,
        q.exclusiveOwner ?? null,
        q.autoDelete,
        q.arguments,
        q.groupId,
        ...(q.founders !== undefined
          ? [q.node ?? null, q.members ?? null, q.founders]
          : q.members !== undefined
            ? [q.node ?? null, q.members]
            : q.node !== undefined
              ? [q.node]
              : []),
      ]),
      bindings: Array.from(vh.bindings.values(), ({ record: b }) => [
        b.source,
        b.destinationKind,
        b.destination,
        b.routingKey,
        b.arguments,
      ]),
      policies: Array.from(vh.policies.values(), (p) => [
        p.name,
        p.pattern,
        p.applyTo,
        p.priority,
        p.definition,
      ]),
    }));
    const users = Array.from(this.usersByName.values(), (u) => [u.name, u.passwordHash, u.tags]);
    const permissions = this.allPermissions().map((p) => [p.user, p.vhost, p.configure, p.write, p.read]);
    const json = JSON.stringify(
      {
        version: SNAPSHOT_VERSION,
        vhosts,
        users,
        permissions,
        clusterNodes: this.membership.snapshotNodes(),
        forgottenNodes: this.membership.forgotten(),
        redrives: this.redrives.snapshotRecords(),
        featureFlags: this.featureFlags.snapshot(),
        drainedNodes: this.membership.drained(),
      },
      fieldJsonReplacer,
    );
    return new TextEncoder().encode(json);
  }

  restore(snapshot: Uint8Array, _meta?: EntryMeta): void {
    let data: SnapshotData;
    try {
      data = JSON.parse(
        new TextDecoder('utf-8', { fatal: true }).decode(snapshot),
        fieldJsonReviver,
      ) as SnapshotData;
    } catch (err) {
      throw new SnapshotFormatError('metadata snapshot is not valid JSON', { cause: err });
    }
    if (!READABLE_SNAPSHOT_VERSIONS.includes(data?.version)) {
      throw new SnapshotFormatError(
        `metadata snapshot version ${String(data?.version)} is not one of ${READABLE_SNAPSHOT_VERSIONS.join(', ')}`,
      );
    }
    this.vhostNodes.clear();
    this.usersByName.clear();
    this.permissionsByUser.clear();
    this.exclusiveByOwner.clear();
    try {
      for (const v of data.vhosts) this.restoreVhost(v);
      for (const [name, passwordHash, tags] of data.users) {
        this.usersByName.set(name, { name, passwordHash, tags: Object.freeze(tags.slice()) });
      }
      for (const [user, vhost, configure, write, read] of data.permissions) {
        let byVhost = this.permissionsByUser.get(user);
        if (byVhost === undefined) {
          byVhost = new Map();
          this.permissionsByUser.set(user, byVhost);
        }
        byVhost.set(vhost, { user, vhost, configure, write, read });
      }
      this.featureFlags.restore(data.featureFlags);
      this.membership.restore(data.clusterNodes, data.forgottenNodes, data.drainedNodes);
      this.redrives.restore(data.redrives);
    } catch (err) {
      if (err instanceof SnapshotFormatError) throw err;
      throw new SnapshotFormatError('metadata snapshot has an unexpected shape', { cause: err });
    }
  }

  private restoreVhost(v: SnapshotVhost): void {
    const vhost = v.name;
    const vh = this.createVhost(vhost);
    for (const [name, type, durable, autoDelete, internal, args] of v.exchanges) {
      if (!isExchangeType(type))
        throw new SnapshotFormatError(`metadata snapshot has exchange type '${type}'`);
      this.createExchange(vh, { vhost, name, type, durable, autoDelete, internal, arguments: args });
    }
    for (const [name, durable, owner, autoDelete, args, groupId, node, members, founders] of v.queues) {
      this.createQueue(vh, {
        vhost,
        name,
        durable,
        exclusiveOwner: owner ?? undefined,
        autoDelete,
        arguments: args,
        groupId,
        ...(node != null ? { node } : {}),
        ...(members != null ? { members: Object.freeze([...members]) } : {}),
        ...(founders != null ? { founders: Object.freeze([...founders]) } : {}),
      });
    }
    for (const [sourceName, destinationKind, destinationName, routingKey, args] of v.bindings) {
      const source = vh.exchanges.get(sourceName);
      const destination =
        destinationKind === 'queue' ? vh.queues.get(destinationName) : vh.exchanges.get(destinationName);
      if (source === undefined || destination === undefined) {
        throw new SnapshotFormatError(
          `metadata snapshot has a binding with a missing end in vhost '${vhost}'`,
        );
      }
      let headers: HeadersPattern | undefined;
      if (source.record.type === 'headers') {
        const parsed = parseHeadersPattern(args);
        if (typeof parsed === 'string') throw new SnapshotFormatError(`metadata snapshot binding: ${parsed}`);
        headers = parsed;
      }
      const record: BindingRecord = {
        vhost,
        source: sourceName,
        destinationKind,
        destination: destinationName,
        routingKey,
        arguments: args,
      };
      const id = bindingId(sourceName, destinationKind, destinationName, routingKey, args);
      this.linkBinding(vh, { id, record, source, destination, headers });
    }
    for (const [name, pattern, applyTo, priority, definition] of v.policies ?? []) {
      if (!isPolicyApplyTo(applyTo))
        throw new SnapshotFormatError(`metadata snapshot has apply-to '${applyTo}'`);
      vh.policies.set(name, {
        vhost,
        name,
        pattern,
        applyTo,
        priority,
        definition: Object.freeze({ ...definition }),
      });
    }
  }
}

interface SnapshotVhost {
  readonly name: string;
  readonly exchanges: readonly [string, string, boolean, boolean, boolean, FieldTable][];
  /**
   * name, durable, exclusive owner, auto-delete, arguments, group id, and the home node if any,
   * then the replicas if recorded (the home node null when absent), then the founders if recorded.
   */
  readonly queues: readonly (
    | [string, boolean, string | null, boolean, FieldTable, string]
    | [string, boolean, string | null, boolean, FieldTable, string, string]
    | [string, boolean, string | null, boolean, FieldTable, string, string | null, readonly string[]]
    | [
        string,
        boolean,
        string | null,
        boolean,
        FieldTable,
        string,
        string | null,
        readonly string[] | null,
        readonly string[],
      ]
  )[];
  readonly bindings: readonly [string, DestinationKind, string, string, FieldTable][];
  /** Absent in version 1. */
  readonly policies?: readonly [string, string, string, number, PolicyDefinition][];
}

interface SnapshotData {
  readonly version: number;
  readonly vhosts: readonly SnapshotVhost[];
  readonly users: readonly [string, string, readonly string[]][];
  readonly permissions: readonly [string, string, string, string, string][];
  /** Absent before version 3. */
  readonly clusterNodes?: readonly ClusterNodeRow[];
  /** Absent before version 3. */
  readonly forgottenNodes?: readonly string[];
  /** Redrive records (redrive-ledger.ts), oldest first; an added key, absent before them: none. */
  readonly redrives?: readonly RedriveRecord[];
  /**
   * Enabled feature flags; absent in snapshots written before them (none enabled). An added key,
   * not a new version: a build from before feature flags restores such a snapshot, ignoring it.
   */
  readonly featureFlags?: readonly string[];
  /** Members in maintenance mode; absent in snapshots written before it existed (none drained). */
  readonly drainedNodes?: readonly string[];
}
