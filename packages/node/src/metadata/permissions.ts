/**
 * Permission checks against the metadata cache, RabbitMQ's internal authorization: a user may use
 * a vhost if it has a permission entry there, and may configure / write / read a resource if the
 * entry's regular expression for that kind matches the resource name. The match is unanchored (as
 * Erlang's `re:run`): 'foo' allows 'a-foo-b'; write '^foo' to anchor. The empty regex allows nothing.
 *
 * The regexes run on the linear-time engine (name-pattern.ts), as every pattern users give the node.
 * Checks run on every publish (write), so each permission record's three regexes are compiled once
 * and cached by record identity; records are immutable and replaced on change, so the cache never
 * serves a stale regex and entries die with their records (WeakMap).
 */
import type { MetadataMachine } from './metadata-machine.ts';
import { NamePattern } from './name-pattern.ts';
import type { PermissionKind, PermissionRecord } from './types.ts';

interface CompiledPermissions {
  readonly configure: NamePattern | null;
  readonly write: NamePattern | null;
  readonly read: NamePattern | null;
}

const compiled = new WeakMap<PermissionRecord, CompiledPermissions>();

/**
 * A permission regex, or null for one that allows nothing: '' or one the linear-time engine cannot
 * compile (new ones are checked before they are proposed, in Broker.manage and the definitions
 * import; only one set before that check can be such a record — it fails closed).
 */
export function compilePermission(source: string): NamePattern | null {
  if (source === '') return null;
  try {
    return NamePattern.compile(source);
  } catch {
    return null;
  }
}

function compiledFor(record: PermissionRecord): CompiledPermissions {
  let c = compiled.get(record);
  if (c === undefined) {
    c = {
      configure: compilePermission(record.configure),
      write: compilePermission(record.write),
      read: compilePermission(record.read),
    };
    compiled.set(record, c);
  }
  return c;
}

/** Whether `user` may `kind` the exchange or queue named `resource` in `vhost`. */
export function canAccess(
  machine: MetadataMachine,
  user: string,
  vhost: string,
  kind: PermissionKind,
  resource: string,
): boolean {
  const record = machine.permissions(user, vhost);
  if (record === undefined) return false;
  const regex = compiledFor(record)[kind];
  return regex?.test(resource) ?? false;
}

/** Whether `user` exists and has a permission entry in the existing vhost `vhost` (may connect to it). */
export function canUseVhost(machine: MetadataMachine, user: string, vhost: string): boolean {
  return (
    machine.user(user) !== undefined &&
    machine.vhost(vhost) !== undefined &&
    machine.permissions(user, vhost) !== undefined
  );
}
