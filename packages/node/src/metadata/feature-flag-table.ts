/**
 * The feature flags enabled in the cluster (cluster/feature-flags.ts), as the metadata machine keeps
 * them: recorded through Raft, so every node agrees and the choice outlives restarts. The machine
 * does not judge whether a flag may be enabled (that needs every member's build, which only the
 * live cluster knows: the node proposing checks it); it records well-formed names, once, for good.
 *
 * Rules: 1 to `MAX_FLAGS_PER_COMMAND` names per command, each 1 to `MAX_FLAG_NAME_LENGTH` characters
 * of [a-z0-9_] (406 otherwise); enabling an enabled flag is a no-op. There is no disabling (as in
 * RabbitMQ: a node may have acted on the flag already).
 *
 * Bounds: one name per flag ever enabled (a few dozen over a cluster's lifetime).
 */
import { ReplyCode } from '@styx/client/wire';
import { error, ok } from './replies.ts';
import type { MetadataReply } from './types.ts';

export const MAX_FLAG_NAME_LENGTH = 64;
export const MAX_FLAGS_PER_COMMAND = 64;
const FLAG_NAME = /^[a-z0-9_]+$/;

export class FeatureFlagTable {
  /** Enabled flags, in the order they were enabled. */
  readonly #enabled = new Set<string>();

  enabled(): ReadonlySet<string> {
    return this.#enabled;
  }

  enable(names: readonly string[]): MetadataReply {
    if (names.length === 0 || names.length > MAX_FLAGS_PER_COMMAND) {
      return error(
        ReplyCode.PRECONDITION_FAILED,
        `enable 1 to ${MAX_FLAGS_PER_COMMAND} feature flags at a time, not ${names.length}`,
      );
    }
    for (const name of names) {
      if (name.length > MAX_FLAG_NAME_LENGTH || !FLAG_NAME.test(name)) {
        return error(
          ReplyCode.PRECONDITION_FAILED,
          `'${name.slice(0, MAX_FLAG_NAME_LENGTH)}' is not a feature flag name (1 to ${MAX_FLAG_NAME_LENGTH} of a-z, 0-9, _)`,
        );
      }
    }
    const fresh = names.filter((name) => !this.#enabled.has(name));
    for (const name of fresh) this.#enabled.add(name);
    return fresh.length > 0 ? ok({ created: true }) : ok();
  }

  /** As a snapshot keeps them. */
  snapshot(): string[] {
    return [...this.#enabled];
  }

  /** Replace with a snapshot's (absent in snapshots from before feature flags: none). */
  restore(names: readonly string[] = []): void {
    this.#enabled.clear();
    for (const name of names) {
      if (typeof name !== 'string') throw new TypeError('an enabled feature flag is not a string');
      this.#enabled.add(name);
    }
  }
}
