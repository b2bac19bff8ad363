// The shapes of the management API's replies the console reads (the fields it uses).

export type JsonObject = Record<string, unknown>;

export interface ReasonTotals {
  readonly rejected: number;
  readonly expired: number;
  readonly maxlen: number;
  readonly delivery_limit: number;
}

export interface EffectiveConfig {
  readonly message_ttl: number | null;
  readonly expires: number | null;
  readonly max_length: number | null;
  readonly max_length_bytes: number | null;
  readonly overflow: string;
  readonly delivery_limit: number | null;
  readonly dead_letter_exchange: string | null;
  readonly dead_letter_routing_key: string | null;
  readonly dead_letter_strategy: string;
}

export interface QueueInfo {
  readonly name: string;
  readonly vhost: string;
  readonly durable: boolean;
  readonly auto_delete: boolean;
  readonly exclusive: boolean;
  readonly arguments: JsonObject;
  readonly node: string;
  readonly leader?: string | null;
  readonly members?: readonly string[];
  readonly online?: readonly string[];
  /** A member offline, or fewer members than the queue should have. */
  readonly under_replicated?: boolean;
  readonly type: string;
  readonly state: string;
  readonly messages: number;
  readonly messages_ready: number;
  readonly messages_unacknowledged: number;
  readonly message_bytes_ready: number;
  readonly consumers: number;
  readonly policy: string | null;
  readonly effective_policy_definition: JsonObject;
  readonly effective_config: EffectiveConfig;
  readonly messages_dead_letter_pending: number;
  /** Of those, hand-offs that cannot go on now (the DLX is missing or routes nowhere). */
  readonly messages_dead_letter_blocked?: number;
  readonly removed: ReasonTotals;
  readonly dead_lettered: ReasonTotals;
  readonly dead_letter_dropped: {
    readonly no_dlx: ReasonTotals;
    readonly cycle: ReasonTotals;
    readonly at_most_once: ReasonTotals;
  };
  readonly replica_bodies?: { readonly missing: number; readonly repaired: number; readonly lost: number };
  /** RabbitMQ's cumulative counters, where the node keeps them. */
  readonly message_stats?: Record<string, number | JsonObject>;
}

export interface QueuePage {
  readonly filtered_count: number;
  readonly item_count: number;
  readonly items: readonly QueueInfo[];
  readonly page: number;
  readonly page_count: number;
  readonly page_size: number;
  readonly total_count: number;
}

export interface PolicyInfo {
  readonly vhost: string;
  readonly name: string;
  readonly pattern: string;
  readonly 'apply-to': string;
  readonly definition: JsonObject;
  readonly priority: number;
}

export interface ExchangeInfo {
  readonly name: string;
  readonly vhost: string;
  readonly type: string;
  readonly durable: boolean;
  readonly auto_delete: boolean;
  readonly internal: boolean;
  readonly arguments: JsonObject;
  readonly policy: string | null;
}

export interface BindingInfo {
  readonly source: string;
  readonly vhost: string;
  readonly destination: string;
  readonly destination_type: string;
  readonly routing_key: string;
  readonly arguments: JsonObject;
  readonly properties_key?: string;
}

export interface NodeInfo {
  readonly name: string;
  readonly running: boolean;
  readonly id: string;
  readonly peer_id: string;
  readonly cluster_address: string;
  readonly metadata_role: string;
  readonly is_metadata_leader: boolean;
  readonly is_self: boolean;
  /**
   * RabbitMQ's resource figures: measured for the node answering, from its last report for another
   * member, null when unknown (an offline member); disk_* null too where no disk is watched.
   */
  readonly mem_used?: number | null;
  readonly mem_limit?: number | null;
  readonly mem_alarm?: boolean | null;
  readonly disk_free?: number | null;
  readonly disk_free_limit?: number | null;
  readonly disk_free_alarm?: boolean | null;
  readonly fd_used?: number | null;
  readonly fd_total?: number | null;
  readonly sockets_used?: number | null;
}

export interface UserInfo {
  readonly name: string;
  readonly tags: readonly string[];
}

export interface VhostInfo {
  readonly name: string;
  readonly messages: number;
  readonly messages_ready: number;
  readonly messages_unacknowledged: number;
}

export interface PermissionInfo {
  readonly user: string;
  readonly vhost: string;
  readonly configure: string;
  readonly write: string;
  readonly read: string;
}

export const REASONS = ['rejected', 'expired', 'maxlen', 'delivery_limit'] as const;

export function reasonTotal(t: ReasonTotals | undefined): number {
  if (t === undefined) return 0;
  return t.rejected + t.expired + t.maxlen + t.delivery_limit;
}

/** A client connection, as GET /api/connections answers (RabbitMQ's fields). */
export interface ConnectionInfo {
  readonly name: string;
  readonly node: string;
  readonly user: string;
  readonly vhost: string;
  readonly protocol: string;
  readonly peer_host: string;
  readonly peer_port: number;
  readonly host: string;
  readonly port: number;
  readonly state: string;
  readonly connected_at: number;
  readonly channels: number;
  readonly timeout: number;
  readonly frame_max: number;
  readonly channel_max: number;
  readonly recv_oct: number;
  readonly send_oct: number;
  readonly client_properties: Readonly<Record<string, unknown>>;
  readonly user_provided_name?: string;
}

/** A channel, as GET /api/channels answers. */
export interface ChannelInfo {
  readonly name: string;
  readonly node: string;
  readonly number: number;
  readonly user: string;
  readonly vhost: string;
  readonly connection_details: {
    readonly name: string;
    readonly peer_host: string;
    readonly peer_port: number;
  };
  readonly state: string;
  readonly consumer_count: number;
  readonly messages_unacknowledged: number;
  readonly messages_unconfirmed: number;
  readonly prefetch_count: number;
  readonly confirm: boolean;
}
