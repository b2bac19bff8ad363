/**
 * Feature flags, after RabbitMQ's: what lets a cluster run nodes of two versions during a rolling
 * upgrade. A flag names a change of the cluster protocol (a new RPC kind, frame or behaviour that
 * every node must understand). Each build supports a set of flags (those `since` its version or
 * older) and announces them in its hello (peer-hello.ts); the metadata group records which flags
 * are enabled. A node uses what a flag guards only while the flag is enabled, and a flag is enabled
 * only when every member supports it, so no node is sent a message it does not know.
 *
 * States, as `styx ctl list_feature_flags` shows them:
 * - `enabled`: recorded in the metadata group; it stays enabled for good (a node lacking it may no
 *   longer join, and downgrading a member below it is not supported).
 * - `disabled`: every member supports it: `styx ctl enable_feature_flag NAME` (or `all`) enables it.
 * - `unavailable`: some member lacks it, or its support is not known (offline, no hello yet).
 *
 * Enabling is the operator's step, as in RabbitMQ, never automatic: until it is taken, any node can
 * still be rolled back to the older version; once taken, it cannot. A cluster formed by a node of
 * this build starts with every flag that node supports enabled.
 *
 * This module is pure: the registry, and the status of each flag given the enabled set and what
 * each member announced.
 */
import { ClusterError } from './errors.ts';
import { CLUSTER_PROTOCOL_VERSION } from './protocol-version.ts';

export interface FeatureFlagSpec {
  /** Stable, snake_case (as RabbitMQ's). */
  readonly name: string;
  /** The first cluster protocol version whose builds support it. */
  readonly since: number;
  readonly description: string;
}

/** Every flag this build knows, oldest first. */
export const FEATURE_FLAGS: readonly FeatureFlagSpec[] = [
  {
    name: 'queue_body_repair',
    since: 2,
    description:
      "a queue leader missing message bodies fetches them from the group's other replicas (cluster RPC " +
      "'queue.bodies'); while disabled such bodies are reported missing and not repaired",
  },
  {
    name: 'consumer_suspicion',
    since: 2,
    description:
      'a queue keeps the consumers of a suspected node (queue log entries suspendOwner/resumeOwner) and ' +
      'returns their messages only once the node is known gone or past x-consumer-disconnected-timeout; ' +
      'while disabled a suspected node’s consumers are given up at once, as before',
  },
  {
    name: 'ordered_publishes',
    since: 2,
    description:
      'a queue takes a publish forwarded by another node only once the earlier ones of its handle were ' +
      'taken (queue log entry tag 19: a publish sent again after a refusal or a lost answer keeps its ' +
      'place); while disabled such a retry may land behind later publishes, as before',
  },
  {
    name: 'maintenance_mode',
    since: 2,
    description:
      'styx ctl drain / revive (metadata command setNodeMaintenance); while disabled a node cannot be ' +
      'put into maintenance mode',
  },
  {
    name: 'redrive',
    since: 2,
    description:
      'moving dead letters back (metadata commands startRedrive, updateRedrive, claimRedrive, ' +
      'cancelRedrive; queue log entry remove, tag 16); while disabled a redrive is refused',
  },
  {
    name: 'binary_queue_answers',
    since: 3,
    description:
      'a node forwards queue commands to their leader as queue-link op 8, answered in binary instead of ' +
      'JSON; while disabled it sends op 1 and reads JSON answers, as before (every build answers both)',
  },
  {
    name: 'queue_founders',
    since: 3,
    description:
      "a new replicated queue's record names its group's initial voters (metadata declareQueue field " +
      "'founders'): every replica starts with all of them; while disabled the first member creates the " +
      'group alone and adds the others one by one',
  },
  {
    name: 'wide_dedupe_window',
    since: 4,
    description:
      'a queue receiving dead-letter hand-offs first records a wider dedupe window in its log (queue log ' +
      'entry setDedupeWindow, tag 20: 4,096 hand-off ids per source instead of 1,024), and a ' +
      'dead-lettering queue keeps 2,048 hand-offs in progress instead of 512; while disabled both stay ' +
      'as before',
  },
  {
    name: 'batched_remote_sends',
    since: 4,
    description:
      'a queue leader sends the deliveries and cancellations of one turn for the channels of another node ' +
      'in one queue-link call (op 9, one frame, one deadline, one answer); while disabled each is a call of ' +
      'its own, as before',
  },
];

/** What a node's build speaks: its cluster protocol version and the flags it supports. */
export interface NodeBuild {
  readonly version: number;
  readonly flags: ReadonlySet<string>;
}

/** The build of `version`: the flags of `registry` since that version or older. */
export function buildOf(version: number, registry: readonly FeatureFlagSpec[] = FEATURE_FLAGS): NodeBuild {
  return { version, flags: new Set(registry.filter((f) => f.since <= version).map((f) => f.name)) };
}

export type FeatureFlagState = 'enabled' | 'disabled' | 'unavailable';

/** A member as the flags' status needs it: its build, undefined while not known (offline, no hello). */
export interface MemberBuild {
  readonly id: string;
  readonly name: string;
  readonly build: NodeBuild | undefined;
}

/** A member's support of one flag. */
export interface FlagSupport {
  readonly node: string;
  /** Its announced cluster protocol version; undefined when not known. */
  readonly version: number | undefined;
  /** undefined: not known (offline, or no hello yet). */
  readonly supported: boolean | undefined;
}

export interface FeatureFlagStatus {
  readonly name: string;
  readonly state: FeatureFlagState;
  /** undefined for a flag enabled in the metadata that this build does not know (a newer one). */
  readonly since: number | undefined;
  readonly description: string;
  /** Every member, oldest first. */
  readonly nodes: readonly FlagSupport[];
}

/**
 * Each flag's status: the registry's flags in order, then any flag enabled in the metadata that
 * the registry does not know (a newer build enabled it; this node lacks it).
 */
export function featureFlagStatus(
  registry: readonly FeatureFlagSpec[],
  enabled: ReadonlySet<string>,
  members: readonly MemberBuild[],
): FeatureFlagStatus[] {
  const known = new Set(registry.map((f) => f.name));
  const unknown = [...enabled].filter((name) => !known.has(name));
  const specs: FeatureFlagSpec[] = [
    ...registry,
    ...unknown.map((name) => ({
      name,
      since: Number.NaN,
      description: 'not known to this node (a newer build)',
    })),
  ];
  return specs.map((spec) => {
    const nodes = members.map(
      (m): FlagSupport => ({
        node: m.name,
        version: m.build?.version,
        supported: m.build === undefined ? undefined : m.build.flags.has(spec.name),
      }),
    );
    const state: FeatureFlagState = enabled.has(spec.name)
      ? 'enabled'
      : nodes.every((n) => n.supported === true)
        ? 'disabled'
        : 'unavailable';
    return {
      name: spec.name,
      state,
      since: Number.isNaN(spec.since) ? undefined : spec.since,
      description: spec.description,
      nodes,
    };
  });
}

/** The name given to `enable_feature_flag` that enables every flag that can be. */
export const ALL_FEATURE_FLAGS = 'all';

/** No flag of that name in this build's registry. */
export class UnknownFeatureFlagError extends ClusterError {
  constructor(name: string) {
    super('FEATURE_FLAG_UNKNOWN', `no feature flag '${name}' (styx ctl list_feature_flags lists them)`);
  }
}

/** The flag cannot be enabled now: some member lacks it, or its support is not known. */
export class FeatureFlagUnavailableError extends ClusterError {
  constructor(name: string, reason: string) {
    super('FEATURE_FLAG_UNAVAILABLE', `feature flag '${name}' cannot be enabled: ${reason}`);
  }
}

/** Why `status` is unavailable, naming the members in the way. */
export function unavailableReason(status: FeatureFlagStatus): string {
  const lacking = status.nodes.filter((n) => n.supported === false);
  const unknown = status.nodes.filter((n) => n.supported === undefined);
  const parts: string[] = [];
  if (lacking.length > 0) {
    parts.push(
      `${lacking.map((n) => `${n.node} (cluster protocol version ${n.version})`).join(', ')} ` +
        `${lacking.length === 1 ? 'does' : 'do'} not support it: upgrade ${lacking.length === 1 ? 'it' : 'them'} first`,
    );
  }
  if (unknown.length > 0) {
    parts.push(
      `the support of ${unknown.map((n) => n.node).join(', ')} is not known (offline, or not yet ` +
        'answered this node): every member must be running',
    );
  }
  return parts.join('; ');
}

/**
 * The flags `request` enables (a flag's name, or `all`), given every flag's status: those not
 * enabled yet. A name that is not a flag throws `UnknownFeatureFlagError`; a flag some member lacks
 * throws `FeatureFlagUnavailableError` (with `all`, such flags are left out, as RabbitMQ's
 * `enable_feature_flag all` leaves out what it cannot enable).
 */
export function flagsToEnable(request: string, statuses: readonly FeatureFlagStatus[]): string[] {
  if (request === ALL_FEATURE_FLAGS) {
    return statuses.filter((s) => s.state === 'disabled').map((s) => s.name);
  }
  const status = statuses.find((s) => s.name === request);
  if (status === undefined) throw new UnknownFeatureFlagError(request);
  if (status.state === 'enabled') return [];
  if (status.state === 'unavailable')
    throw new FeatureFlagUnavailableError(request, unavailableReason(status));
  return [request];
}

/**
 * Why a node announcing `build` may not join a cluster with `enabled` flags, or undefined when it
 * may: it must support every enabled flag (or it would be sent what it does not know).
 */
export function joinRefusal(enabled: ReadonlySet<string>, build: NodeBuild): string | undefined {
  const lacking = [...enabled].filter((name) => !build.flags.has(name));
  if (lacking.length === 0) return undefined;
  return (
    `it runs cluster protocol version ${build.version} and lacks the feature flag(s) ${lacking.join(', ')} ` +
    'enabled in this cluster: start it with a newer build'
  );
}

/** The flag that guards body repair across the cluster (broker/body-fetch.ts). */
export const QUEUE_BODY_REPAIR_FLAG = 'queue_body_repair';

/**
 * The flag that guards owner suspension (broker/owner-suspicion.ts): its queue log entries are
 * unknown to a replica of an older build, which could not apply them.
 */
export const CONSUMER_SUSPICION_FLAG = 'consumer_suspicion';

/**
 * The flag that guards ordered publishes (broker/cluster-queue.ts): their queue log entries (tag
 * 19) are unknown to a replica of an older build, which could not decode them.
 */
export const ORDERED_PUBLISHES_FLAG = 'ordered_publishes';

/**
 * The flag that guards binary answers to forwarded queue commands (queue-link op 8,
 * cluster/queue-rpc-codec.ts): an older build does not know the op.
 */
export const BINARY_QUEUE_ANSWERS_FLAG = 'binary_queue_answers';

/**
 * The flag that guards batched sends to other nodes' channels (queue-link op 9,
 * cluster/remote-send-batches.ts): an older build does not know the op.
 */
export const BATCHED_REMOTE_SENDS_FLAG = 'batched_remote_sends';

/** The flag that guards maintenance mode's metadata command (management/maintenance-api.ts). */
export const MAINTENANCE_MODE_FLAG = 'maintenance_mode';

/**
 * The flag that guards founded queue groups (broker/replica-start.ts): a member of an older build
 * ignores a record's founders and would start its replica with another membership.
 */
export const QUEUE_FOUNDERS_FLAG = 'queue_founders';

/**
 * The flag that guards the wider dedupe window (queue/queue-actor.ts): its queue log entry (tag 20)
 * is unknown to a replica of an older build, and the window decides which hand-offs are duplicates,
 * so every replica must take it from the same log index.
 */
export const WIDE_DEDUPE_WINDOW_FLAG = 'wide_dedupe_window';

/** The flag that guards redrive's metadata commands and queue entries (management/redrive-api.ts). */
export const REDRIVE_FLAG = 'redrive';

/**
 * The 400 text for a change an older member could not apply: `flag` is not enabled cluster-wide.
 */
export function flagNotEnabledText(flag: string, what: string): string {
  return (
    `${what} needs the feature flag '${flag}' enabled cluster-wide (a node of an older build could not ` +
    `apply it): upgrade every node, then run styx ctl enable_feature_flag ${flag}`
  );
}

/** What code guarded by a flag asks: may it use the flag's messages now, and does this build know them. */
export interface FeatureFlagGate {
  /** Enabled cluster-wide and supported by this build: the flag's messages may be sent. */
  isEnabled(name: string): boolean;
  /** This build supports it (it answers the flag's messages; a pretend-older node does not). */
  isSupported(name: string): boolean;
}

/** A flag guarding what is off: refused here, before anything is sent. */
export class FeatureFlagDisabledError extends ClusterError {
  constructor(name: string, what: string) {
    super(
      'FEATURE_FLAG_DISABLED',
      `${what} is unavailable: feature flag '${name}' is not enabled in this cluster ` +
        '(styx ctl list_feature_flags; enable it with styx ctl enable_feature_flag once every node supports it)',
    );
  }
}

/** Feature flags as operators see and change them (the management API, `styx ctl`). */
export interface FeatureFlagsView {
  /** Every flag's status, members as this node knows them now. */
  list(): Promise<FeatureFlagStatus[]>;
  /**
   * Enable a flag by name, or `all`: the names enabled now (none when already enabled). Rejects
   * with `UnknownFeatureFlagError`, `FeatureFlagUnavailableError`, or the cluster's errors.
   */
  enable(request: string): Promise<string[]>;
}

/**
 * The flags of a node without clustering: every flag of its build is in use (it has no peer to
 * agree with), and there is nothing to enable.
 */
export function standaloneFeatureFlags(
  selfName: string,
  build: NodeBuild = buildOf(CLUSTER_PROTOCOL_VERSION),
): FeatureFlagsView {
  const list = async (): Promise<FeatureFlagStatus[]> =>
    featureFlagStatus(FEATURE_FLAGS, build.flags, [{ id: selfName, name: selfName, build }]);
  return {
    list,
    enable: async (request) => flagsToEnable(request, await list()),
  };
}
