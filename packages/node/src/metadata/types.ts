/**
 * The metadata store's vocabulary: the records it keeps, the commands that change them and the
 * replies `MetadataMachine.apply` returns.
 *
 * Every command is decided entirely inside the machine from the command and the current state, so
 * every replica reaches the same answer: facts only the node knows (a queue's live consumer and
 * message counts for `ifUnused`/`ifEmpty`, a generated group id, the declaring connection) travel
 * in the command and so are part of the log.
 *
 * Records are immutable: a change replaces the record object, so a record handed out by an
 * accessor never changes under its holder (and caches keyed by record identity stay valid).
 */
import type { FieldTable } from '@styx/client/wire';
import type { RedriveCommand } from './redrive-types.ts';

/** The exchange types Styx implements (RabbitMQ's four built-ins). */
export const EXCHANGE_TYPES = ['direct', 'fanout', 'topic', 'headers'] as const;
export type ExchangeType = (typeof EXCHANGE_TYPES)[number];

/** Which permission a check is about (RabbitMQ's configure / write / read). */
export type PermissionKind = 'configure' | 'write' | 'read';

/** The kind of a binding's destination. */
export type DestinationKind = 'queue' | 'exchange';

export interface VhostRecord {
  readonly name: string;
}

export interface UserRecord {
  readonly name: string;
  /** An encoded password hash from `hashPassword` (never the password). */
  readonly passwordHash: string;
  /** RabbitMQ user tags: 'administrator', 'management', 'monitoring', 'policymaker', ... */
  readonly tags: readonly string[];
}

/**
 * A user's permissions in one vhost: three regular expressions matched (unanchored, as RabbitMQ's
 * `re:run`) against resource names. '' matches nothing; '.*' matches everything.
 */
export interface PermissionRecord {
  readonly user: string;
  readonly vhost: string;
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

export interface ExchangeRecord {
  readonly vhost: string;
  readonly name: string;
  readonly type: ExchangeType;
  readonly durable: boolean;
  /** Deleted when the last binding with this exchange as source goes away. */
  readonly autoDelete: boolean;
  /** May not be published to directly; reachable through exchange-to-exchange bindings. */
  readonly internal: boolean;
  readonly arguments: FieldTable;
}

export interface QueueRecord {
  readonly vhost: string;
  readonly name: string;
  readonly durable: boolean;
  /** The connection id owning an exclusive queue; undefined for a shared queue. */
  readonly exclusiveOwner: string | undefined;
  /** Deleted by the node when its last consumer cancels. */
  readonly autoDelete: boolean;
  readonly arguments: FieldTable;
  /** The replicated log group of this queue incarnation (a redeclared queue gets a new one). */
  readonly groupId: string;
  /**
   * The node the queue was declared on. Absent on queues declared before clustering: the node
   * holding them.
   */
  readonly node?: string;
  /**
   * The nodes holding a replica of the queue's Raft group, the preferred leader first. Absent on
   * queues declared before queues were replicated: `node` alone holds them (or, without `node`,
   * the node that has them).
   */
  readonly members?: readonly string[];
  /**
   * The voters the queue's Raft group was created with, the first of them campaigning at once:
   * every founder's replica starts from this same membership at index 0 (no member is added one by
   * one). Never changes with `members`. Absent on queues declared without the `queue_founders`
   * flag: their first member created the group alone and added the others.
   */
  readonly founders?: readonly string[];
}

export interface BindingRecord {
  readonly vhost: string;
  /** The source exchange (never the default exchange ''). */
  readonly source: string;
  readonly destinationKind: DestinationKind;
  readonly destination: string;
  readonly routingKey: string;
  readonly arguments: FieldTable;
}

/** What a policy applies to (RabbitMQ's `apply-to`). */
export const POLICY_APPLY_TO = ['queues', 'exchanges', 'all'] as const;
export type PolicyApplyTo = (typeof POLICY_APPLY_TO)[number];

/**
 * A validated policy definition: RabbitMQ's policy keys for the queue settings Styx implements.
 * Keys absent from the definition leave the queue's own arguments (or the defaults) in force.
 */
export interface PolicyDefinition {
  /** '' is the default exchange, a valid DLX. */
  readonly 'dead-letter-exchange'?: string;
  readonly 'dead-letter-routing-key'?: string;
  readonly 'dead-letter-strategy'?: 'at-most-once' | 'at-least-once';
  /** ms, 0..2^32-1. */
  readonly 'message-ttl'?: number;
  /** ms, 1..2^32-1. */
  readonly expires?: number;
  readonly 'max-length'?: number;
  /** bytes. */
  readonly 'max-length-bytes'?: number;
  readonly overflow?: 'drop-head' | 'reject-publish' | 'reject-publish-dlx';
  readonly 'delivery-limit'?: number;
  /** ms, 0..2^32-1 (RabbitMQ 4.3's key; `x-consumer-disconnected-timeout` wins over it). */
  readonly 'consumer-disconnected-timeout'?: number;
}

/**
 * A policy: settings applied by the node to every queue and/or exchange of a vhost whose name
 * matches `pattern` (a regular expression, unanchored as RabbitMQ's `re:run`). Of the policies
 * matching a resource, only one applies: the highest `priority`; see `MetadataMachine.policyFor`.
 */
export interface PolicyRecord {
  readonly vhost: string;
  readonly name: string;
  readonly pattern: string;
  readonly applyTo: PolicyApplyTo;
  readonly priority: number;
  readonly definition: PolicyDefinition;
}

/**
 * A member of the cluster: one node, as the metadata group records it. The cluster layer admits
 * peers, routes Raft traffic and sizes the metadata group's voters from this table alone.
 */
export interface ClusterNodeRecord {
  /** The node's Raft node id (unique, never reused once forgotten). */
  readonly id: string;
  /** The node's libp2p peer id (unique, never reused once forgotten). */
  readonly peerId: string;
  /** The node's readable name (`styx server --node-name`), unique in the cluster. */
  readonly name: string;
  /** Where other nodes reach it: its cluster listen address, `HOST:PORT`. */
  readonly address: string;
  /** When it first joined: the `ts` of the entry that added it, ms since the epoch. */
  readonly joinedAt: number;
}

// ---------------------------------------------------------------------------------------- commands

/**
 * `connectionId` on queue commands is the acting client connection, for RabbitMQ's exclusive-queue
 * rule (405 RESOURCE_LOCKED when another connection owns the queue). Leave it undefined for the
 * node's own operations (x-expires, auto-delete, management), which may touch any queue.
 */
export type MetadataCommand =
  | { readonly type: 'addVhost'; readonly name: string }
  /** The redrive audit (redrive-types.ts, rules in redrive-ledger.ts). */
  | RedriveCommand
  /** Removes the vhost with all its exchanges, queues, bindings and permissions. */
  | { readonly type: 'deleteVhost'; readonly name: string }
  /** Creates or replaces a user. */
  | {
      readonly type: 'putUser';
      readonly name: string;
      readonly passwordHash: string;
      readonly tags: readonly string[];
    }
  /** Removes the user and all its permissions. */
  | { readonly type: 'deleteUser'; readonly name: string }
  | {
      readonly type: 'setPermissions';
      readonly user: string;
      readonly vhost: string;
      readonly configure: string;
      readonly write: string;
      readonly read: string;
    }
  | { readonly type: 'clearPermissions'; readonly user: string; readonly vhost: string }
  | {
      readonly type: 'declareExchange';
      readonly vhost: string;
      readonly name: string;
      /** Validated here: anything but the four built-in types is 503 COMMAND_INVALID. */
      readonly exchangeType: string;
      readonly durable: boolean;
      readonly autoDelete: boolean;
      readonly internal: boolean;
      readonly arguments: FieldTable;
    }
  | {
      readonly type: 'deleteExchange';
      readonly vhost: string;
      readonly name: string;
      readonly ifUnused: boolean;
    }
  | {
      readonly type: 'declareQueue';
      readonly vhost: string;
      readonly name: string;
      readonly durable: boolean;
      /** The declaring connection when exclusive; undefined for a shared queue. */
      readonly exclusiveOwner: string | undefined;
      readonly autoDelete: boolean;
      readonly arguments: FieldTable;
      /** A fresh id the node generated for this incarnation; kept only if the queue is created. */
      readonly groupId: string;
      /**
       * The node generated the name (the client declared ''). Only then may it start with the
       * reserved prefix 'amq.' (RabbitMQ's 'amq.gen-...').
       */
      readonly serverNamed?: boolean | undefined;
      /** The declaring node (see `QueueRecord.node`). */
      readonly node?: string | undefined;
      /** The replicas (see `QueueRecord.members`), placed by the declaring node. */
      readonly members?: readonly string[] | undefined;
      /** The group's initial voters (see `QueueRecord.founders`): `members`, when given. */
      readonly founders?: readonly string[] | undefined;
    }
  /**
   * The replicas of a queue's Raft group changed (add_member, delete_member, grow, shrink): the
   * record's `members` becomes `members`. Ignored (ok, nothing changed) when the queue or this
   * incarnation (`groupId`) is gone; 406 for an empty list or a node that is not a member.
   */
  | {
      readonly type: 'setQueueMembers';
      readonly vhost: string;
      readonly name: string;
      readonly groupId: string;
      readonly members: readonly string[];
    }
  | {
      readonly type: 'deleteQueue';
      readonly vhost: string;
      readonly name: string;
      readonly ifUnused: boolean;
      readonly ifEmpty: boolean;
      /** The queue's live consumer count as the node saw it when proposing. */
      readonly consumers: number;
      /** The queue's message count (ready + unacked) as the node saw it when proposing. */
      readonly messages: number;
      readonly connectionId?: string | undefined;
      /**
       * Delete only this incarnation: if the queue was deleted and redeclared since the node
       * decided (x-expires, auto-delete), the newer queue is left alone (reply `removed: false`).
       */
      readonly groupId?: string | undefined;
    }
  | BindCommand
  | (Omit<BindCommand, 'type'> & { readonly type: 'unbind' })
  /** The connection closed: remove its exclusive queues. */
  | { readonly type: 'deleteExclusive'; readonly connectionId: string }
  /**
   * Creates or replaces a policy. Validated here: `pattern` must compile, `applyTo` be one of
   * POLICY_APPLY_TO, `priority` an integer and `definition` a non-empty object of known policy
   * keys with values of the right type (406 otherwise, with the reason).
   */
  | {
      readonly type: 'setPolicy';
      readonly vhost: string;
      readonly name: string;
      readonly pattern: string;
      readonly applyTo: string;
      readonly priority: number;
      /** JSON as received; validated by the machine (so every replica refuses the same input). */
      readonly definition: Readonly<Record<string, unknown>>;
    }
  /** Removes a policy; 404 if there is none of that name in the vhost. */
  | { readonly type: 'clearPolicy'; readonly vhost: string; readonly name: string }
  /**
   * Records a node as a member of the cluster, or updates the name and address of the member with
   * this id and peer id (a restart). 406 when the id or peer id was forgotten, when either belongs
   * to another member, or when another member has the name (see cluster-membership.ts).
   */
  | {
      readonly type: 'addClusterNode';
      readonly id: string;
      readonly peerId: string;
      readonly name: string;
      readonly address: string;
    }
  /**
   * Records feature flags as enabled cluster-wide, for good (cluster/feature-flags.ts). The proposing
   * node has checked that every member supports them; the machine checks the names only (406).
   */
  | { readonly type: 'enableFeatureFlags'; readonly names: readonly string[] }
  /**
   * Removes a member (rabbitmqctl's forget_cluster_node), named by id or by name; its id and peer
   * id may never join again. 404 for an unknown node; 406 for the last member.
   */
  | { readonly type: 'forgetClusterNode'; readonly node: string }
  /**
   * Puts a member into maintenance mode (`drained: true`, `styx ctl drain`) or takes it out of it
   * (`styx ctl revive`), named by id or name: a drained node hands its leaderships over and serves
   * no clients (broker/node-maintenance.ts). Kept here, not on the node, so it survives the node's
   * restart and every node knows it (rebalances move no leader to it). 404 for an unknown node.
   */
  | { readonly type: 'setNodeMaintenance'; readonly node: string; readonly drained: boolean };

export interface BindCommand {
  readonly type: 'bind';
  readonly vhost: string;
  readonly source: string;
  readonly destinationKind: DestinationKind;
  readonly destination: string;
  readonly routingKey: string;
  readonly arguments: FieldTable;
  readonly connectionId?: string | undefined;
}

export type MetadataCommandType = MetadataCommand['type'];

// ----------------------------------------------------------------------------------------- replies

export interface MetadataOk {
  readonly type: 'ok';
  /** Something new was made (vhost, user, permission entry, exchange, queue, binding, policy). */
  readonly created: boolean;
  /**
   * The named thing existed and was removed (vhost, user, permission entry, exchange, queue,
   * binding, policy).
   */
  readonly removed: boolean;
  /** declareExchange: the exchange in force (the existing one on an equivalent redeclare). */
  readonly exchange: ExchangeRecord | undefined;
  /** declareQueue: the queue in force (the existing one, with its groupId, on a redeclare). */
  readonly queue: QueueRecord | undefined;
  /** Queues that no longer exist: the node stops their actors and drops their messages. */
  readonly deletedQueues: readonly QueueRecord[];
  /** Exchanges that no longer exist, including auto-delete exchanges that lost their last binding. */
  readonly deletedExchanges: readonly ExchangeRecord[];
}

/** A refused command. `code` is an AMQP reply code; `text` reads like RabbitMQ's. */
export interface MetadataError {
  readonly type: 'error';
  readonly code: number;
  readonly text: string;
}

export type MetadataReply = MetadataOk | MetadataError;
