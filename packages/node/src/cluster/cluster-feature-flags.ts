/**
 * Feature flags in a running cluster (see feature-flags.ts for the model): this node's build, the
 * builds its peers announced (peer-hello.ts), and the enabled set the metadata group records.
 *
 * - `isEnabled` is what guarded code asks before it sends a flag's message: a set lookup, no I/O.
 * - `enable` checks that every member supports the flag as their hellos said (so every member must
 *   be connected), then records it through the metadata group. There is a window between that check
 *   and the commit in which a member could restart as an older build; a node never sends what its
 *   own build lacks, and an older peer answers such a message as unknown without closing anything.
 * - A joining node tells its build in its join request; a node lacking an enabled flag is refused.
 * - The node that forms a cluster enables every flag of its build.
 */
import type { Logger } from '../logging/logger.ts';
import type { MetadataGroup } from '../metadata/metadata-group.ts';
import type { MetadataCommand, MetadataReply } from '../metadata/metadata-machine.ts';
import { ClusterChangeRefusedError, ClusterUnavailableError } from './cluster-view.ts';
import type { FeatureFlagGate, FeatureFlagStatus, FeatureFlagsView, NodeBuild } from './feature-flags.ts';
import { FEATURE_FLAGS, featureFlagStatus, flagsToEnable, joinRefusal } from './feature-flags.ts';
import type { PeerHello } from './peer-hello.ts';
import { LEGACY_PROTOCOL_VERSION } from './protocol-version.ts';

/** How long `list` waits for hellos still missing from connected members, ms. */
const HELLO_REFRESH_MS = 2_000;

export interface ClusterFeatureFlagsOptions {
  readonly selfId: string;
  readonly hello: PeerHello;
  readonly logger: Logger;
  /** Run a metadata command here when this node leads the group, else on the leader. */
  readonly propose: (command: MetadataCommand) => Promise<MetadataReply>;
}

/** What a join request says of the joiner's build (absent from a build before feature flags). */
export interface JoinerBuild {
  readonly version?: unknown;
  readonly flags?: unknown;
}

export class ClusterFeatureFlags implements FeatureFlagGate, FeatureFlagsView {
  readonly build: NodeBuild;
  readonly #options: ClusterFeatureFlagsOptions;
  readonly #log: Logger;
  #group: MetadataGroup | undefined;
  /** Enabled flags this build lacks, already logged. */
  readonly #lackingLogged = new Set<string>();

  constructor(options: ClusterFeatureFlagsOptions) {
    this.#options = options;
    this.build = options.hello.build;
    this.#log = options.logger.child({ component: 'feature-flags' });
  }

  /** The metadata replica is open: follow what it enables. */
  attach(group: MetadataGroup): void {
    this.#group = group;
    group.onApplied((command) => {
      if (command === undefined || command.type === 'enableFeatureFlags')
        this.#enabledChanged(command?.names);
    });
    this.#enabledChanged(undefined);
  }

  isEnabled(name: string): boolean {
    return this.build.flags.has(name) && (this.#group?.state.enabledFeatureFlags().has(name) ?? false);
  }

  isSupported(name: string): boolean {
    return this.build.flags.has(name);
  }

  async list(): Promise<FeatureFlagStatus[]> {
    const group = this.#group;
    if (group === undefined) throw new ClusterUnavailableError('this node is still starting');
    const { selfId, hello } = this.#options;
    const peers = group.state.clusterNodes().filter((m) => m.id !== selfId);
    await hello.refresh(
      peers.map((m) => m.peerId),
      HELLO_REFRESH_MS,
    );
    // By name, so the answer is stable whatever order the members joined in.
    const members = group.state
      .clusterNodes()
      .map((m) => ({
        id: m.id,
        name: m.name,
        build: m.id === selfId ? this.build : hello.of(m.peerId),
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return featureFlagStatus(FEATURE_FLAGS, group.state.enabledFeatureFlags(), members);
  }

  async enable(request: string): Promise<string[]> {
    const names = flagsToEnable(request, await this.list());
    if (names.length === 0) return [];
    const reply = await this.#options.propose({ type: 'enableFeatureFlags', names });
    if (reply.type === 'error') throw new ClusterChangeRefusedError(reply.text);
    this.#log.info({ flags: names }, 'feature flags enabled');
    return names;
  }

  /** Why a joiner announcing `joiner` may not join now, or undefined when it may. */
  joinRefusal(joiner: JoinerBuild): string | undefined {
    const enabled = this.#group?.state.enabledFeatureFlags();
    if (enabled === undefined || enabled.size === 0) return undefined;
    const version = Number.isSafeInteger(joiner.version)
      ? (joiner.version as number)
      : LEGACY_PROTOCOL_VERSION;
    const flags = Array.isArray(joiner.flags)
      ? joiner.flags.filter((f): f is string => typeof f === 'string')
      : [];
    return joinRefusal(enabled, { version, flags: new Set(flags) });
  }

  /** This node forms a new cluster: every flag of its build starts enabled. */
  async enableAtFormation(): Promise<void> {
    const names = [...this.build.flags];
    if (names.length === 0) return;
    const reply = await this.#options.propose({ type: 'enableFeatureFlags', names });
    if (reply.type === 'error') throw new ClusterChangeRefusedError(reply.text);
    this.#log.info({ flags: names }, 'new cluster: its feature flags enabled');
  }

  /** Log what was enabled, and (once each) an enabled flag this build lacks: a downgraded node. */
  #enabledChanged(names: readonly string[] | undefined): void {
    const enabled = this.#group?.state.enabledFeatureFlags();
    if (enabled === undefined) return;
    if (names !== undefined) this.#log.info({ flags: names }, 'feature flags enabled cluster-wide');
    for (const name of enabled) {
      if (this.build.flags.has(name) || this.#lackingLogged.has(name)) continue;
      this.#lackingLogged.add(name);
      this.#log.error(
        { flag: name, version: this.build.version },
        `feature flag '${name}' is enabled in this cluster but this node's build lacks it: running an ` +
          'older version than the enabled flags is not supported; start it with the build the others run',
      );
    }
  }
}
