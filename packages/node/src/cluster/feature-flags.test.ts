import { describe, expect, it } from 'vitest';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { FeatureFlagSpec, MemberBuild } from './feature-flags.ts';
import {
  buildOf,
  FeatureFlagUnavailableError,
  featureFlagStatus,
  flagsToEnable,
  joinRefusal,
  standaloneFeatureFlags,
  UnknownFeatureFlagError,
} from './feature-flags.ts';
import { decodeHello, encodeHello, HelloMalformedError } from './peer-hello.ts';
import { receivedUnknown, unknownMessageText } from './protocol-version.ts';

/** A registry of three versions: v2 added `b`, v3 added `c`. */
const REGISTRY: readonly FeatureFlagSpec[] = [
  { name: 'a', since: 1, description: 'old' },
  { name: 'b', since: 2, description: 'newer' },
  { name: 'c', since: 3, description: 'newest' },
];

const member = (name: string, version: number | undefined): MemberBuild => ({
  id: `id-${name}`,
  name,
  build: version === undefined ? undefined : buildOf(version, REGISTRY),
});

describe('feature flag registry', () => {
  it('gives a build the flags of its version and older', () => {
    expect([...buildOf(3, REGISTRY).flags]).toEqual(['a', 'b', 'c']);
    expect([...buildOf(2, REGISTRY).flags]).toEqual(['a', 'b']);
    expect([...buildOf(0, REGISTRY).flags]).toEqual([]);
  });

  it('states each flag: enabled, disabled when every member supports it, unavailable otherwise', () => {
    const statuses = featureFlagStatus(REGISTRY, new Set(['a']), [
      member('n1', 3),
      member('n2', 3),
      member('n3', 2),
    ]);
    expect(statuses.map((s) => [s.name, s.state])).toEqual([
      ['a', 'enabled'],
      ['b', 'disabled'],
      ['c', 'unavailable'],
    ]);
    const c = statuses[2];
    expect(c?.nodes).toEqual([
      { node: 'n1', version: 3, supported: true },
      { node: 'n2', version: 3, supported: true },
      { node: 'n3', version: 2, supported: false },
    ]);
  });

  it('counts a member whose build is not known (offline) as not supporting yet', () => {
    const [, b] = featureFlagStatus(REGISTRY, new Set(), [member('n1', 3), member('n2', undefined)]);
    expect(b?.state).toBe('unavailable');
    expect(b?.nodes[1]).toEqual({ node: 'n2', version: undefined, supported: undefined });
  });

  it('lists a flag enabled by a newer build that this registry does not know', () => {
    const statuses = featureFlagStatus(REGISTRY, new Set(['a', 'z']), [member('n1', 3)]);
    expect(statuses.at(-1)).toMatchObject({ name: 'z', state: 'enabled', since: undefined });
    expect(statuses.at(-1)?.nodes).toEqual([{ node: 'n1', version: 3, supported: false }]);
  });

  it('enables by name only what every member supports, naming who lacks it', () => {
    const statuses = featureFlagStatus(REGISTRY, new Set(['a']), [
      member('n1', 3),
      member('n2', 2),
      member('n3', undefined),
    ]);
    expect(flagsToEnable('b', featureFlagStatus(REGISTRY, new Set(['a']), [member('n1', 3)]))).toEqual(['b']);
    expect(flagsToEnable('a', statuses)).toEqual([]);
    const refused = (() => {
      try {
        flagsToEnable('c', statuses);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(FeatureFlagUnavailableError);
    expect((refused as Error).message).toMatch(/n2 \(cluster protocol version 2\) does not support it/);
    expect((refused as Error).message).toMatch(/support of n3 is not known/);
    expect(() => flagsToEnable('nope', statuses)).toThrow(UnknownFeatureFlagError);
  });

  it("enables with 'all' every flag that can be, leaving out those some member lacks", () => {
    const statuses = featureFlagStatus(REGISTRY, new Set(['a']), [member('n1', 3), member('n2', 2)]);
    expect(flagsToEnable('all', statuses)).toEqual(['b']);
    const allCurrent = featureFlagStatus(REGISTRY, new Set(['a']), [member('n1', 3), member('n2', 3)]);
    expect(flagsToEnable('all', allCurrent)).toEqual(['b', 'c']);
  });

  it('refuses a joiner that lacks an enabled flag', () => {
    expect(joinRefusal(new Set(['a', 'b']), buildOf(2, REGISTRY))).toBeUndefined();
    expect(joinRefusal(new Set(['a', 'b', 'c']), buildOf(2, REGISTRY))).toMatch(
      /version 2 and lacks the feature flag\(s\) c/,
    );
    expect(joinRefusal(new Set(), buildOf(1, []))).toBeUndefined();
  });

  it('on a node alone, has every flag of its build in use', async () => {
    const view = standaloneFeatureFlags('solo');
    const flags = await view.list();
    expect(flags.length).toBeGreaterThan(0);
    expect(flags.every((f) => f.state === 'enabled')).toBe(true);
    expect(await view.enable('all')).toEqual([]);
  });
});

describe('hello', () => {
  it('round-trips a build and ignores fields it does not know', () => {
    const build = buildOf(2, REGISTRY);
    expect(decodeHello(encodeHello(build))).toEqual(build);
    const later = new TextEncoder().encode(JSON.stringify({ version: 3, flags: ['a'], region: 'x' }));
    expect(decodeHello(later)).toEqual({ version: 3, flags: new Set(['a']) });
  });

  it('refuses malformed hellos', () => {
    const bad = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    expect(() => decodeHello(new Uint8Array([0xff]))).toThrow(HelloMalformedError);
    expect(() => decodeHello(bad({ version: 0, flags: [] }))).toThrow(/bad version/);
    expect(() => decodeHello(bad({ version: 2 }))).toThrow(/flags/);
    expect(() => decodeHello(bad({ version: 2, flags: [3] }))).toThrow(/flags/);
    expect(() => decodeHello(bad(null))).toThrow(HelloMalformedError);
  });
});

describe('unknown messages', () => {
  it("name the sender's and the receiver's versions", () => {
    const versions = { localVersion: 1, versionOf: (peer: string) => (peer === 'S' ? 2 : undefined) };
    const { message, text } = receivedUnknown(versions, 'R', 'S', 'rpc', "kind 'queue.bodies'");
    expect(message).toEqual({
      protocol: 'rpc',
      what: "kind 'queue.bodies'",
      peer: 'S',
      senderVersion: 2,
      receiverVersion: 1,
    });
    expect(text).toBe(
      "node R (cluster protocol version 1) does not know rpc kind 'queue.bodies' sent by node S " +
        '(cluster protocol version 2); the stream stays open for the messages it knows',
    );
    expect(
      unknownMessageText({
        protocol: 'raft',
        what: 'frame kind 9',
        sender: 'S',
        senderVersion: undefined,
        receiver: 'R',
        receiverVersion: 2,
      }),
    ).toMatch(/sent by node S \(unknown version \(no hello yet\)\)/);
  });
});

describe('enabled flags in the metadata', () => {
  it('are recorded once, for good, kept by snapshots, and checked for form only', () => {
    const machine = new MetadataMachine();
    expect(machine.apply({ type: 'enableFeatureFlags', names: ['queue_body_repair'] })).toMatchObject({
      type: 'ok',
      created: true,
    });
    expect(machine.apply({ type: 'enableFeatureFlags', names: ['queue_body_repair'] })).toMatchObject({
      type: 'ok',
      created: false,
    });
    expect(machine.apply({ type: 'enableFeatureFlags', names: [] })).toMatchObject({
      type: 'error',
      code: 406,
    });
    expect(machine.apply({ type: 'enableFeatureFlags', names: ['Bad Name'] })).toMatchObject({
      type: 'error',
      code: 406,
    });
    expect(machine.apply({ type: 'enableFeatureFlags', names: 'x' } as never)).toMatchObject({
      type: 'error',
      code: 503,
    });
    const restored = new MetadataMachine();
    restored.restore(machine.snapshot());
    expect([...restored.enabledFeatureFlags()]).toEqual(['queue_body_repair']);
  });

  it('are none after restoring a snapshot written before them', () => {
    const machine = new MetadataMachine();
    machine.apply({ type: 'enableFeatureFlags', names: ['queue_body_repair'] });
    const json = JSON.parse(new TextDecoder().decode(machine.snapshot())) as Record<string, unknown>;
    delete json.featureFlags;
    const restored = new MetadataMachine();
    restored.restore(new TextEncoder().encode(JSON.stringify(json)));
    expect(restored.enabledFeatureFlags().size).toBe(0);
  });
});
