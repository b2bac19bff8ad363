/**
 * Resource alarms, cluster-wide (RabbitMQ's rabbit_alarm): when ANY member has a memory or disk
 * alarm, publishers on every member are blocked, since a message published anywhere may be written
 * on the member short of memory or disk (its queues' replicas are there).
 *
 * Each member pushes a report of its own — its alarms and the figures `/api/nodes` shows of it —
 * to every other member over cluster RPC (`RESOURCE_REPORT_RPC`): at once when one of its alarms
 * is raised or cleared, and every `REPORT_INTERVAL_MS` besides, so that a lost push is repaired and
 * a member that joins or comes back learns the others' alarms within that time. A report is trusted
 * for `REPORT_TTL_MS`; a member that stops reporting (down, partitioned away) has its alarms
 * dropped, as RabbitMQ clears the alarms of a node that goes down (a node cut off from the cluster
 * must not block the rest forever). A member running a version without this RPC answers
 * UNKNOWN_KIND: it neither sends nor gets alarms, and its pushes are not retried beyond the
 * periodic one.
 */
import { RpcError, RpcUnknownKindError } from '../cluster/cluster-rpc.ts';
import type { Logger } from '../logging/logger.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import type { AlarmResource } from './resource-monitor.ts';

/** The cluster RPC kind a member pushes its resource report with. */
export const RESOURCE_REPORT_RPC = 'resource-report';
/** How often each member pushes its report to the others, ms. */
export const REPORT_INTERVAL_MS = 5_000;
/** How long a member's report stands without a fresh one, ms (three pushes missed). */
export const REPORT_TTL_MS = 3 * REPORT_INTERVAL_MS + 1_000;
/** Bound on one push, ms. */
const PUSH_TIMEOUT_MS = 3_000;

/** A member's figures as RabbitMQ's `/api/nodes` names them; null where the member cannot tell. */
export interface NodeResourceFigures {
  readonly mem_used: number;
  /** The memory budget; 0 when unlimited. */
  readonly mem_limit: number;
  readonly disk_free: number | null;
  /** null when the member watches no disk (it runs without a data directory). */
  readonly disk_free_limit: number | null;
  readonly fd_used: number | null;
  readonly fd_total: number | null;
  readonly sockets_used: number;
  readonly sockets_total: number | null;
}

/** What a member reports: its alarms in effect and its figures. */
export interface NodeResourceReport {
  /** The member's node id. */
  readonly node: string;
  readonly alarms: readonly AlarmResource[];
  readonly figures: NodeResourceFigures;
}

/** One alarm in effect, on the member `node` (a node id). */
export interface NodeAlarm {
  readonly node: string;
  readonly resource: AlarmResource;
}

export interface ResourceAlarmsHost {
  readonly selfId: string;
  readonly logger: Logger;
  /** Absent on a node alone: its alarms are the cluster's. */
  readonly cluster: Pick<BrokerCluster, 'handleRpc' | 'callRpc' | 'isDown' | 'onNodeDown'> | undefined;
  /** The node ids of the other members. */
  members(): readonly string[];
  /** This node's figures now. */
  figures(): NodeResourceFigures;
  /** A node's name for messages. */
  nameOf(nodeId: string): string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export class ResourceAlarms {
  readonly #host: ResourceAlarmsHost;
  readonly #log: Logger;
  readonly #local = new Set<AlarmResource>();
  /** The last report of each other member, with when it arrived (performance.now()). */
  readonly #remote = new Map<string, { readonly report: NodeResourceReport; readonly at: number }>();
  readonly #listeners = new Set<() => void>();
  /** Members that answered UNKNOWN_KIND (an older version), logged once each. */
  readonly #withoutRpc = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  /** The block reason listeners last saw: a change of the alarm set that leaves it equal is no news. */
  #lastReason: string | undefined;

  constructor(host: ResourceAlarmsHost) {
    this.#host = host;
    this.#log = host.logger.child({ component: 'resource-alarms' });
    host.cluster?.handleRpc(RESOURCE_REPORT_RPC, async (payload) => {
      let report: NodeResourceReport;
      try {
        report = decodeReport(payload);
      } catch (error) {
        throw new RpcError('BAD_REQUEST', (error as Error).message);
      }
      this.#received(report);
      return new Uint8Array(0);
    });
    host.cluster?.onNodeDown((nodeId) => {
      if (this.#remote.delete(nodeId)) this.#changed();
    });
  }

  /** Push reports periodically (a clustered node); the first push goes out at once. */
  start(): void {
    if (this.#host.cluster === undefined || this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.#expire();
      this.#pushToAll();
    }, REPORT_INTERVAL_MS);
    this.#timer.unref();
    this.#pushToAll();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#listeners.clear();
  }

  /** Call `listener` whenever the reason publishers are blocked for changes (or they are unblocked). */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Raise (or clear) one of this node's alarms; the other members hear of it at once. */
  setLocal(resource: AlarmResource, raised: boolean): void {
    if (raised === this.#local.has(resource)) return;
    if (raised) this.#local.add(resource);
    else this.#local.delete(resource);
    this.#changed();
    this.#pushToAll();
  }

  /** This node's alarms in effect. */
  local(): NodeAlarm[] {
    return [...this.#local].sort().map((resource) => ({ node: this.#host.selfId, resource }));
  }

  /** Every alarm in effect in the cluster as this node knows it: its own, then the members' by id. */
  all(): NodeAlarm[] {
    this.#expire();
    const remote = [...this.#remote.values()]
      .map(({ report }) => report)
      .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
      .flatMap((report) => [...report.alarms].sort().map((resource) => ({ node: report.node, resource })));
    return [...this.local(), ...remote];
  }

  /** Another member's last report, while it stands; undefined for this node or without one. */
  reportOf(nodeId: string): NodeResourceReport | undefined {
    this.#expire();
    return this.#remote.get(nodeId)?.report;
  }

  /**
   * Why publishers are blocked, in words (the connection.blocked reason), or undefined when no
   * alarm is in effect anywhere in the cluster.
   */
  blockReason(): string | undefined {
    const alarms = this.all();
    if (alarms.length === 0) return undefined;
    return alarms
      .map(({ node, resource }) => {
        const where = node === this.#host.selfId ? '' : ` on node ${this.#host.nameOf(node)}`;
        return resource === 'memory'
          ? `memory budget exceeded${where}`
          : `low on disk space${where}: free disk space is below disk_free_limit`;
      })
      .join('; ');
  }

  /** The report this node pushes. */
  ownReport(): NodeResourceReport {
    return { node: this.#host.selfId, alarms: [...this.#local].sort(), figures: this.#host.figures() };
  }

  #received(report: NodeResourceReport): void {
    if (report.node === this.#host.selfId) return;
    const before = this.#remote.get(report.node)?.report.alarms.join(',');
    this.#remote.set(report.node, { report, at: performance.now() });
    if (before !== report.alarms.join(',')) {
      this.#log.info(
        { node: report.node, alarms: report.alarms },
        report.alarms.length > 0 ? 'a member has resource alarms in effect' : "a member's alarms cleared",
      );
      this.#changed();
    }
  }

  /** Drop reports older than REPORT_TTL_MS: their members stopped reporting. */
  #expire(): void {
    const now = performance.now();
    let dropped = false;
    for (const [node, { report, at }] of this.#remote) {
      if (now - at <= REPORT_TTL_MS) continue;
      this.#remote.delete(node);
      if (report.alarms.length > 0) {
        this.#log.warn({ node, alarms: report.alarms }, 'a member stopped reporting: its alarms are dropped');
        dropped = true;
      }
    }
    if (dropped) this.#changed();
  }

  #changed(): void {
    const reason = this.blockReason();
    if (reason === this.#lastReason) return;
    this.#lastReason = reason;
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch (error) {
        this.#log.error({ err: error }, 'resource alarm listener failed');
      }
    }
  }

  #pushToAll(): void {
    const cluster = this.#host.cluster;
    if (cluster === undefined) return;
    const payload = encoder.encode(JSON.stringify(this.ownReport()));
    for (const node of this.#host.members()) {
      if (node === this.#host.selfId || cluster.isDown(node)) continue;
      cluster.callRpc(node, RESOURCE_REPORT_RPC, payload, PUSH_TIMEOUT_MS).catch((error: unknown) => {
        if (error instanceof RpcUnknownKindError) {
          if (!this.#withoutRpc.has(node)) {
            this.#withoutRpc.add(node);
            this.#log.warn(
              { node },
              'a member does not take resource reports (an older version): alarms are not shared with it',
            );
          }
          return;
        }
        this.#log.debug({ node, err: error }, 'resource report not delivered (the next one follows)');
      });
    }
  }
}

const RESOURCES: ReadonlySet<string> = new Set<AlarmResource>(['memory', 'disk']);
const FIGURE_KEYS: readonly (keyof NodeResourceFigures)[] = [
  'mem_used',
  'mem_limit',
  'disk_free',
  'disk_free_limit',
  'fd_used',
  'fd_total',
  'sockets_used',
  'sockets_total',
];
const NULLABLE: ReadonlySet<string> = new Set([
  'disk_free',
  'disk_free_limit',
  'fd_used',
  'fd_total',
  'sockets_total',
]);

/** A pushed report, checked; throws an Error saying what is wrong. */
export function decodeReport(payload: Uint8Array): NodeResourceReport {
  const value = JSON.parse(decoder.decode(payload)) as unknown;
  if (typeof value !== 'object' || value === null) throw new Error('a resource report is a JSON object');
  const v = value as Record<string, unknown>;
  if (typeof v.node !== 'string' || v.node === '') throw new Error("a resource report needs its 'node'");
  if (!Array.isArray(v.alarms) || !v.alarms.every((a) => typeof a === 'string' && RESOURCES.has(a))) {
    throw new Error("'alarms' must be a list of 'memory' and 'disk'");
  }
  const f = v.figures;
  if (typeof f !== 'object' || f === null) throw new Error("a resource report needs its 'figures'");
  const figures: Record<string, number | null> = {};
  for (const key of FIGURE_KEYS) {
    const x = (f as Record<string, unknown>)[key];
    const ok = (x === null && NULLABLE.has(key)) || (Number.isSafeInteger(x) && (x as number) >= 0);
    if (!ok) throw new Error(`figure '${key}' must be a whole number of at least 0`);
    figures[key] = x as number | null;
  }
  return {
    node: v.node,
    alarms: [...new Set(v.alarms as AlarmResource[])],
    figures: figures as unknown as NodeResourceFigures,
  };
}
