/**
 * Which policy applies to a queue or exchange. Of the vhost's policies whose `apply-to` covers
 * the resource's kind and whose pattern matches its name (unanchored, as RabbitMQ's `re:run`:
 * '.*' matches everything, '^orders\.' anchors), the one with the highest priority applies —
 * only that one; definitions are never merged.
 *
 * Ties: RabbitMQ leaves the choice between equal priorities unspecified. Styx picks the policy
 * whose name sorts first (UTF-16 code unit order), so every replica and every restart agree.
 * Example: 'a-dlx' and 'b-ttl' both priority 0 and both matching 'orders' → 'a-dlx' applies.
 *
 * Patterns run on the linear-time engine (name-pattern.ts): a policymaker's pattern such as
 * `(a+)+$` would otherwise freeze the node on every declare. They are compiled once per record and
 * cached by record identity (records are immutable and replaced on change, so a cached pattern is
 * never stale; entries die with their records).
 */
import { NamePattern } from './name-pattern.ts';
import type { PolicyRecord } from './types.ts';

const compiled = new WeakMap<PolicyRecord, NamePattern | null>();

/**
 * A policy's pattern; null for one the linear-time engine cannot compile, which then matches
 * nothing. New policies are checked before they are proposed (Broker.manage, the definitions
 * import); only one set before that check (a lookahead, a backreference) can be such a record.
 */
function patternOf(policy: PolicyRecord): NamePattern | null {
  let regex = compiled.get(policy);
  if (regex === undefined) {
    try {
      regex = NamePattern.compile(policy.pattern);
    } catch {
      regex = null;
    }
    compiled.set(policy, regex);
  }
  return regex;
}

/** Whether `policy` applies to the `kind` named `name` (ignoring the other policies). */
export function policyMatches(policy: PolicyRecord, kind: 'queue' | 'exchange', name: string): boolean {
  if (policy.applyTo !== 'all' && policy.applyTo !== (kind === 'queue' ? 'queues' : 'exchanges'))
    return false;
  return patternOf(policy)?.test(name) ?? false;
}

/** Whether `a` takes precedence over `b`: higher priority, then the name that sorts first. */
function outranks(a: PolicyRecord, b: PolicyRecord): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  return a.name < b.name;
}

/** The policy that applies to the `kind` named `name` among `policies`, if any. */
export function selectPolicy(
  policies: Iterable<PolicyRecord>,
  kind: 'queue' | 'exchange',
  name: string,
): PolicyRecord | undefined {
  let best: PolicyRecord | undefined;
  for (const policy of policies) {
    if ((best === undefined || outranks(policy, best)) && policyMatches(policy, kind, name)) best = policy;
  }
  return best;
}
