/**
 * Who may call each management API endpoint: one rule per route and method (access-table.ts holds
 * them all), checked by the router before the handler runs, following RabbitMQ's management plugin:
 *
 * - `management`: the API in the vhosts where the user has a permission entry; other vhosts answer
 *   404 exactly as if missing, so their names cannot be probed;
 * - `policymaker`: management, plus policies in the vhosts where it has a permission entry (not
 *   others, even when another tag lets it see them);
 * - `monitoring`: management, plus reading every vhost's objects and node-level state (nodes,
 *   cluster, checks); reading messages still needs the read permission;
 * - `administrator`: everything (users, vhosts, permissions, definitions, cluster changes, policies
 *   anywhere), except messaging without permissions: declaring, deleting, binding, purging and
 *   reading messages need the user's permission regexes in the vhost, administrators included.
 *
 * A rule names the tags that may call the endpoint, each with its reach: every vhost ('all') or
 * the vhosts where the user has a permission entry ('member'); the vhost the request names (a
 * path parameter or `?vhost=`); and the permission regexes checked on the resources it names.
 */
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { canAccess } from '../metadata/permissions.ts';
import type { PermissionKind, UserRecord } from '../metadata/types.ts';
import { forbidden, notFound } from './api-error.ts';
import { exchangeFromPath } from './exchange-path.ts';

export const ADMINISTRATOR = 'administrator';
/** Reads the whole node's state and health (RabbitMQ's `monitoring` tag). */
export const MONITORING = 'monitoring';
/** May also read and change policies in its vhosts. */
export const POLICYMAKER = 'policymaker';
/** May use the management API in the vhosts it has permissions in. */
export const MANAGEMENT = 'management';
/** The tags that let a user use the management API at all. */
export const MANAGEMENT_TAGS: readonly string[] = [ADMINISTRATOR, MONITORING, POLICYMAKER, MANAGEMENT];

export type ManagementTag = typeof ADMINISTRATOR | typeof MONITORING | typeof POLICYMAKER | typeof MANAGEMENT;

/** The vhosts a tag's grant covers: every one, or those where the user has a permission entry. */
export type Reach = 'all' | 'member';

/** A permission regex checked on a resource the path names. */
export interface ResourcePermission {
  readonly kind: PermissionKind;
  /** The path parameter naming the resource. */
  readonly param: number;
  /** The parameter names an exchange ('amq.default' in a path is the default exchange ''). */
  readonly exchange?: boolean;
}

/** One endpoint's access rule. */
export interface AccessRule {
  /** Each tag that may call the endpoint, with its reach; a user with none of them gets 403. */
  readonly tags: Readonly<Partial<Record<ManagementTag, Reach>>>;
  /**
   * Where the request names its vhost: a path parameter's index, or 'query' for `?vhost=` (when
   * given). Absent: the endpoint is node-wide, or lists the vhosts the user reaches.
   */
  readonly vhost?: number | 'query';
  /** Permission regexes checked on the named resources, for every user (administrators too). */
  readonly permissions?: readonly ResourcePermission[];
}

/** 403 unless `user` has one of `tags` ("Not administrator or monitoring user", as RabbitMQ words it). */
export function requireTag(user: UserRecord, tags: readonly string[]): void {
  if (!tags.some((tag) => user.tags.includes(tag))) {
    throw forbidden(`Not ${tags.join(' or ')} user`);
  }
}

/** Whether `user` sees `vhost` at all: administrators and monitoring users see every vhost. */
export function seesVhost(metadata: MetadataMachine, user: UserRecord, vhost: string): boolean {
  if (metadata.vhost(vhost) === undefined) return false;
  if (user.tags.includes(ADMINISTRATOR) || user.tags.includes(MONITORING)) return true;
  return metadata.permissions(user.name, vhost) !== undefined;
}

/** What a request may do, from its rule: handlers of lists keep the vhosts `reaches` allows. */
export interface RequestAccess {
  /** Whether the rule lets the user act in `vhost` (which exists). */
  reaches(vhost: string): boolean;
}

/** The access `rule` gives `user`. */
export function accessOf(metadata: MetadataMachine, rule: AccessRule, user: UserRecord): RequestAccess {
  const reaches = Object.entries(rule.tags)
    .filter(([tag]) => user.tags.includes(tag))
    .map(([, reach]) => reach);
  return {
    reaches: (vhost) =>
      metadata.vhost(vhost) !== undefined &&
      (reaches.includes('all') ||
        (reaches.includes('member') && metadata.permissions(user.name, vhost) !== undefined)),
  };
}

/**
 * Refuse the request unless `rule` allows it, in this order, so that a refusal reveals nothing it
 * should not: a user without one of the rule's tags gets 403 before any lookup; a vhost the user
 * does not see answers 404 as a missing one; a vhost it sees but the rule does not reach for it
 * (a monitoring policymaker's policy in a vhost without its permissions) 403; then each permission
 * regex the rule names, 403 naming it.
 */
export function checkAccess(
  metadata: MetadataMachine,
  rule: AccessRule,
  user: UserRecord,
  params: readonly string[],
  query: URLSearchParams,
): RequestAccess {
  requireTag(user, Object.keys(rule.tags));
  const access = accessOf(metadata, rule, user);
  const vhost =
    rule.vhost === undefined
      ? undefined
      : rule.vhost === 'query'
        ? (query.get('vhost') ?? undefined)
        : params[rule.vhost];
  if (vhost === undefined) return access;
  if (!seesVhost(metadata, user, vhost)) throw notFound(`no vhost '${vhost}'`);
  if (!access.reaches(vhost)) {
    throw forbidden(`access to vhost '${vhost}' refused for user '${user.name}' (no permissions there)`);
  }
  for (const p of rule.permissions ?? []) {
    const raw = params[p.param] as string;
    const name = p.exchange === true ? exchangeFromPath(raw) : raw;
    if (!canAccess(metadata, user.name, vhost, p.kind, name)) {
      const what = p.exchange === true ? 'exchange' : 'resource';
      throw forbidden(
        `access to ${what} '${name}' in vhost '${vhost}' refused for user '${user.name}' (${p.kind} permission needed)`,
      );
    }
  }
  return access;
}
