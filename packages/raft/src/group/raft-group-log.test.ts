import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.ts';
import type { ComplianceDeps, CounterCommand, CounterResult } from '../compliance/index.ts';
import { CounterMachine, counterCodec, replicatedLogCompliance } from '../compliance/index.ts';
import { LogCorruptedError, NotLeaderError } from '../errors.ts';
import { openLogStore } from '../lmdb/log-store.ts';
import { Prng } from '../raft/sim/prng.ts';
import type { EntryMeta, RoleChange } from '../replicated-log.ts';
import { SingleVoterLog } from '../single-voter-log.ts';
import type { LogStore } from '../storage/log-store.ts';
import type { InProcessTransport } from './in-process-transport.ts';
import { InProcessHub } from './in-process-transport.ts';
import type { RaftGroupLog } from './raft-group-log.ts';
import { RaftHost } from './raft-host.ts';

const NODE = 'node-a';

/** One-voter groups on one host over real LMDB in a temporary directory. */
function oneVoterHarness() {
  let dir = '';
  let store: LogStore | undefined;
  let host: RaftHost | undefined;
  const current = (): RaftHost => {
    if (host === undefined) throw new Error('harness not set up');
    return host;
  };
  const start = (): void => {
    store = openLogStore(dir);
    host = new RaftHost({ nodeId: NODE, logStore: store, tickMs: 10 });
  };
  return {
    setup() {
      dir = mkdtempSync(join(tmpdir(), 'styx-raft-group-'));
      start();
    },
    async teardown() {
      await host?.close();
      await store?.close();
      host = undefined;
      store = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
    create<C, R>(groupId: string, deps: ComplianceDeps<C>) {
      return current().createLog<C, R>(groupId, deps.codec, { clock: deps.clock });
    },
    async restart() {
      await current().close();
      await store?.close();
      start();
    },
    async crash() {
      // As in single-voter-log.test.ts: queued writes are lost, a batch handed to LMDB completes.
      await current().close();
      await store?.abort();
      start();
    },
  };
}

replicatedLogCompliance('RaftGroupLog, one voter on LMDB', oneVoterHarness());

/** A group of three voters on three hosts (each with its own LMDB) over the in-process transport. */
class ThreeNodes {
  readonly ids = ['n1', 'n2', 'n3'];
  readonly dirs: string[] = [];
  readonly stores: LogStore[] = [];
  readonly hosts: RaftHost[] = [];
  readonly hub = new InProcessHub();
  readonly transports: InProcessTransport[] = [];
  /** The followers' logs and machines, per group. */
  readonly followers = new Map<
    string,
    { log: RaftGroupLog<CounterCommand, CounterResult>; machine: CounterMachine }[]
  >();

  /** `campaignsPerTick`: per node id, when a test wants another than the default. */
  constructor(campaignsPerTick: Readonly<Record<string, number>> = {}) {
    for (const id of this.ids) {
      const dir = mkdtempSync(join(tmpdir(), `styx-raft-${id}-`));
      const store = openLogStore(dir);
      this.dirs.push(dir);
      this.stores.push(store);
      // n1 campaigns when its replica opens; if its peers have not opened theirs yet, its pre-vote
      // is lost and it retries after 10-20 ticks. The others wait 30-60 ticks before campaigning
      // themselves, so n1 leads first (the compliance suite waits for the replica it opened to lead).
      const electionTicks = id === 'n1' ? 10 : 30;
      const transport = this.hub.connect(id);
      this.transports.push(transport);
      const perTick = campaignsPerTick[id];
      this.hosts.push(
        new RaftHost({
          nodeId: id,
          logStore: store,
          transport,
          tickMs: 10,
          raft: { electionTicks },
          ...(perTick === undefined ? {} : { campaignsPerTick: perTick }),
        }),
      );
    }
  }

  host(i: number): RaftHost {
    return this.hosts[i] as RaftHost;
  }

  /** The replica on n1 (campaigning first, so it leads), with replicas on n2 and n3 opened beside it. */
  create<C, R>(
    groupId: string,
    deps: ComplianceDeps<C>,
    followerMachine: () => CounterMachine = () => new CounterMachine(),
  ): RaftGroupLog<C, R> {
    const followers = [1, 2].map((i) => {
      const log = this.host(i).createLog<CounterCommand, CounterResult>(groupId, counterCodec, {
        voters: this.ids,
        clock: deps.clock,
      });
      const machine = followerMachine();
      void log.open(machine).catch(() => {});
      return { log, machine };
    });
    this.followers.set(groupId, followers);
    return this.host(0).createLog<C, R>(groupId, deps.codec, {
      voters: this.ids,
      clock: deps.clock,
      campaignOnOpen: true,
    });
  }

  async close(): Promise<void> {
    for (const host of this.hosts) await host.close();
    for (const store of this.stores) await store.close();
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

function threeVoterHarness() {
  let nodes: ThreeNodes | undefined;
  return {
    leaderAtOpen: false,
    setup() {
      nodes = new ThreeNodes();
    },
    async teardown() {
      await nodes?.close();
      nodes = undefined;
    },
    create<C, R>(groupId: string, deps: ComplianceDeps<C>) {
      if (nodes === undefined) throw new Error('harness not set up');
      return nodes.create<C, R>(groupId, deps);
    },
  };
}

replicatedLogCompliance('RaftGroupLog, three voters on three hosts', threeVoterHarness());

type CounterLog = RaftGroupLog<CounterCommand, CounterResult>;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/**
 * A counter with data kept outside its snapshot (as a queue keeps its bodies): the values applied,
 * carried to a follower only by the transfer methods.
 */
class SideDataCounter extends CounterMachine {
  side: number[] = [];
  readonly transfers: EntryMeta[] = [];
  readonly installs: EntryMeta[] = [];

  override apply(command: CounterCommand, meta: EntryMeta): CounterResult {
    this.side.push(command.add);
    return super.apply(command, meta);
  }

  transferSnapshot(snapshot: Uint8Array, meta: EntryMeta): Uint8Array {
    this.transfers.push(meta);
    const payload = { snapshot: textDecoder.decode(snapshot), side: this.side.slice(0, meta.index) };
    return textEncoder.encode(JSON.stringify(payload));
  }

  installTransferSnapshot(transfer: Uint8Array, meta: EntryMeta): Uint8Array {
    this.installs.push(meta);
    const payload = JSON.parse(textDecoder.decode(transfer)) as { snapshot: string; side: number[] };
    this.side = payload.side;
    return textEncoder.encode(payload.snapshot);
  }
}

async function leads(log: CounterLog): Promise<void> {
  if (log.role === 'leader') return;
  await new Promise<void>((resolve) => {
    const stop = log.onRole((change) => {
      if (change.role === 'leader') {
        stop();
        resolve();
      }
    });
  });
}

/** Resolves once `check` holds, polling each event-loop turn (bounded by the test timeout). */
async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * Resolves once `hosts` have every group quiesced and none ticked for 100 ms (bounded by the test
 * timeout). Not "no tick at all from the moment the last group quiesced": a storage write
 * completing late (pipelined, up to 4 Readies in flight) may still deliver a message that wakes a
 * replica for one tick before its leader quiesces it again. A host whose timer kept running (a
 * follower woken while its leader sleeps, ticking towards an election) never gets here.
 */
async function stopsTicking(
  hosts: readonly { stats: { ticks: number; activeGroups: number } }[],
): Promise<void> {
  for (;;) {
    await eventually(() => hosts.every((host) => host.stats.activeGroups === 0));
    const ticks = hosts.map((host) => host.stats.ticks);
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (hosts.every((host, i) => host.stats.ticks === ticks[i] && host.stats.activeGroups === 0)) return;
  }
}

describe('RaftGroupLog, three voters', () => {
  let nodes: ThreeNodes;
  const clock = new ManualClock(1_700_000_000_000);

  beforeEach(() => {
    nodes = new ThreeNodes();
  });

  afterEach(async () => {
    await nodes.close();
  });

  it("applies the leader's sequence, with the same metas, on every follower", async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    const machine = new CounterMachine();
    await leader.open(machine);
    await leads(leader);
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => leader.propose({ add: i + 1 })));
    clock.advance(-1_000); // ts never goes backwards
    results.push(await leader.propose({ add: 51, fail: true }).catch(() => results[0] as CounterResult));
    const followers = nodes.followers.get('g') ?? [];
    await eventually(() => followers.every((f) => f.machine.state.values.length === 51));
    for (const follower of followers) {
      expect(follower.machine.state).toEqual(machine.state);
      expect(follower.machine.appliedIndexes).toEqual(machine.appliedIndexes);
      expect(follower.log.role).toBe('follower');
    }
    expect(machine.appliedIndexes).toEqual(Array.from({ length: 51 }, (_, i) => i + 1));
  });

  it("reports each replica's term and commit index (diagnostics)", async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    expect([leader.term, leader.commitIndex]).toEqual([0, 0]);
    await leader.open(new CounterMachine());
    await leads(leader);
    await leader.propose({ add: 1 });
    expect(leader.term).toBeGreaterThan(0);
    expect(leader.commitIndex).toBeGreaterThanOrEqual(leader.appliedIndex);
    const followers = nodes.followers.get('g') ?? [];
    await eventually(() => followers.every((f) => f.log.appliedIndex === leader.appliedIndex));
    for (const follower of followers) {
      expect(follower.log.term).toBe(leader.term);
      expect(follower.log.commitIndex).toBeGreaterThanOrEqual(follower.log.appliedIndex);
    }
  });

  it('rejects a proposal on a follower with NotLeaderError naming the leader', async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    const follower = nodes.followers.get('g')?.[0]?.log as CounterLog;
    await eventually(() => follower.state === 'open');
    await eventually(() => follower.role === 'follower');
    const error = await follower.propose({ add: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotLeaderError);
    expect((error as NotLeaderError).leader).toBe('n1');
  });

  it('elects a new leader after the leader is cut off, and keeps every committed entry', async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    await Promise.all([1, 2, 3].map((add) => leader.propose({ add })));
    const followers = nodes.followers.get('g') ?? [];
    const roles: RoleChange[] = [];
    for (const f of followers) f.log.onRole((change) => roles.push(change));
    nodes.hub.disconnect('n1');
    await eventually(() => followers.some((f) => f.log.role === 'leader'));
    const next = followers.find((f) => f.log.role === 'leader') as (typeof followers)[number];
    const result = await next.log.propose({ add: 4 });
    expect(result.index).toBe(4);
    expect(result.total).toBe(10);
    expect(roles.some((change) => change.role === 'leader')).toBe(true);
  });

  it("fails every proposal a cut-off leader made once it hears a new leader's shorter log, with nothing new proposed", async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    await Promise.all([1, 2, 3].map((add) => leader.propose({ add })));
    // A partition, not a crash: n1 keeps leading its side and takes proposals that cannot commit.
    // (The failure detector's word wakes n2 and n3 if n1 had quiesced them before the cut.)
    nodes.hub.isolate('n1');
    const stranded = [4, 5, 6, 7, 8].map((add) =>
      leader.propose({ add }).then(
        () => 'committed',
        (error: unknown) => (error instanceof NotLeaderError ? 'lost' : String(error)),
      ),
    );
    const followers = nodes.followers.get('g') ?? [];
    await eventually(() => followers.some((f) => f.log.role === 'leader'));
    // Healed, and the new leader (whose log ends before the stranded entries) gets no new command:
    // only its term's first entry overwrites one of theirs. All five must fail, none wait forever.
    nodes.hub.isolate(undefined);
    expect(await Promise.all(stranded)).toEqual(['lost', 'lost', 'lost', 'lost', 'lost']);
    await eventually(() => leader.role === 'follower');
  });

  it.each([
    1, 2,
  ])('resolves a proposal only if it committed, and fails one with NotLeaderError only if it did not, under random partitions (seed %i)', async (seed) => {
    const prng = new Prng(seed);
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    const leaderMachine = new CounterMachine();
    await leader.open(leaderMachine);
    await leads(leader);
    const replicas = [{ log: leader, machine: leaderMachine }, ...(nodes.followers.get('g') ?? [])] as {
      log: CounterLog;
      machine: CounterMachine;
    }[];
    const outcomes = new Map<number, Promise<'committed' | 'lost' | 'other'>>();
    let next = 1;
    for (let round = 0; round < 8; round++) {
      // Often the leader, often long enough for the others to elect one of their own (300-600 ms).
      const leading = replicas.findIndex((r) => r.log.role === 'leader');
      const victim = prng.chance(0.6) && leading >= 0 ? leading : prng.nextInt(3);
      nodes.hub.isolate(prng.chance(0.8) ? (nodes.ids[victim] as string) : undefined);
      const until = Date.now() + prng.between(200, 900);
      while (Date.now() < until) {
        // Every replica that believes it leads takes proposals, a cut-off one included.
        for (const { log } of replicas) {
          if (log.role !== 'leader') continue;
          const add = next++;
          outcomes.set(
            add,
            log.propose({ add }).then(
              () => 'committed' as const,
              (error: unknown) => (error instanceof NotLeaderError ? ('lost' as const) : ('other' as const)),
            ),
          );
        }
        await new Promise((resolve) => setTimeout(resolve, prng.between(1, 20)));
      }
    }
    nodes.hub.isolate(undefined);
    // Healed; one more command from the final leader writes every index anyone proposed at. The
    // replica that reports leading right after the heal may be a cut-off leader that has not heard
    // of the newer term yet: its command is then lost (NotLeaderError), and the next leader's
    // command does the job.
    let final: (typeof replicas)[number] | undefined;
    while (final === undefined) {
      await eventually(() => replicas.some((r) => r.log.role === 'leader'));
      const candidate = replicas.find((r) => r.log.role === 'leader') as (typeof replicas)[number];
      try {
        await candidate.log.propose({ add: 0 });
        final = candidate;
      } catch (error) {
        if (!(error instanceof NotLeaderError)) throw error;
      }
    }
    const settled = new Map<number, string>();
    for (const [add, outcome] of outcomes) settled.set(add, await outcome);
    const committed = final.machine.state.values;
    expect(new Set(committed).size).toBe(committed.length);
    const inLog = new Set(committed);
    for (const [add, outcome] of settled) {
      if (outcome === 'committed') expect(inLog.has(add), `proposal ${add} resolved`).toBe(true);
      else expect(inLog.has(add), `proposal ${add} failed as ${outcome}`).toBe(false);
    }
    expect([...settled.values()].filter((o) => o === 'other')).toEqual([]);
    expect([...settled.values()].filter((o) => o === 'lost').length).toBeGreaterThan(0);
  });

  it('quiesces an idle group on every host and wakes it with a proposal', async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    await leader.propose({ add: 1 });
    const term = leader.term;
    await stopsTicking(nodes.hosts);
    // Asleep, not elected anew: a follower left ticking would have timed out and campaigned.
    expect(leader.role).toBe('leader');
    expect(leader.term).toBe(term);
    const result = await leader.propose({ add: 2 });
    expect(result.total).toBe(3);
    const followers = nodes.followers.get('g') ?? [];
    await eventually(() => followers.every((f) => f.machine.state.total === 3));
    await eventually(() => nodes.hosts.every((host) => host.stats.activeGroups === 0));
  });

  it.each([
    'quiesced',
    'busy',
  ])('%s followers whose leader goes down elect a new one within electionTicks / 2 ticks, not an election timeout', async (state) => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    await leader.propose({ add: 1 });
    const followers = nodes.followers.get('g') ?? [];
    if (state === 'quiesced') {
      await eventually(() => nodes.hosts.every((host) => host.stats.activeGroups === 0));
    } else {
      // Proposals keep coming until the cut: the followers are ticking, their timers running.
      for (let add = 2; add <= 20; add++) {
        void leader.propose({ add }).catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    const ticksBefore = nodes.hosts.map((host) => host.stats.ticks);
    const term = leader.term;
    nodes.hub.disconnect('n1');
    await eventually(() => followers.some((f) => f.log.role === 'leader'));
    // Their election timeout is 30-59 ticks (see ThreeNodes); the word that n1 is down cuts it to
    // 1-15, plus the election's round trips. Counted in host ticks, not wall time. (Both followers
    // campaigning within one round trip split the vote and wait a whole timeout: rare, and told
    // apart by the term it burns.)
    const elected = followers.find((f) => f.log.role === 'leader') as (typeof followers)[number];
    const host = nodes.host(followers.indexOf(elected) + 1);
    const ticks = host.stats.ticks - (ticksBefore[followers.indexOf(elected) + 1] as number);
    if (elected.log.term === term + 1) expect(ticks).toBeLessThan(30);
  });

  /** `count` groups led by n1, each with one entry committed, every host quiesced. */
  async function groupsLedByN1(count: number, on: ThreeNodes = nodes): Promise<CounterLog[]> {
    const leaders: CounterLog[] = [];
    for (let i = 0; i < count; i++) {
      const leader = on.create<CounterCommand, CounterResult>(`g${i}`, { codec: counterCodec, clock });
      await leader.open(new CounterMachine());
      leaders.push(leader);
    }
    for (const leader of leaders) await leads(leader);
    await Promise.all(leaders.map((leader) => leader.propose({ add: 1 })));
    await eventually(() => on.hosts.every((host) => host.stats.activeGroups === 0));
    // A follower quiesces when the leader's notice arrives, and applies the commit the notice
    // carries once its own write of that commit is durable, a moment later (longer under load).
    const followerMachines = [...on.followers.values()].flatMap((pair) => pair.map((f) => f.machine));
    await eventually(() => followerMachines.every((machine) => machine.state.total === 1));
    return leaders;
  }

  it('gives each group whose leader goes down one campaign: no split vote, new leaders spread over the survivors', async () => {
    const count = 40;
    await groupsLedByN1(count);
    const replicas = [...nodes.followers.values()];
    nodes.hub.disconnect('n1');
    await eventually(() => replicas.every((pair) => pair.some((f) => f.log.role === 'leader')));
    let preVotes = 0;
    let elections = 0;
    let won = 0;
    for (const pair of replicas) {
      for (const { log } of pair) {
        preVotes += log.preVotes;
        elections += log.elections;
        won += log.electionsWon;
      }
    }
    // Both survivors campaigning for a group at once (as each did within 1-15 ticks, at random)
    // would show as a second pre-vote round, and as a lost election when both got that far.
    expect({ preVotes, elections, won }).toEqual({ preVotes: count, elections: count, won: count });
    const ledByN2 = replicas.filter((pair) => pair[0]?.log.role === 'leader').length;
    expect(ledByN2).toBeGreaterThan(0);
    expect(ledByN2).toBeLessThan(count);
  });

  it('quiesces leaders without a member reported down, and wakes them to catch it up once it is heard from', async () => {
    const leaders = await groupsLedByN1(5);
    nodes.hub.isolate('n3');
    await Promise.all(leaders.map((leader) => leader.propose({ add: 2 })));
    // n3 lags every group, but it is down: n1 and n2 stop ticking all the same.
    await stopsTicking([nodes.host(0), nodes.host(1)]);
    const onN3 = [...nodes.followers.values()].map((pair) => pair[1]?.machine as CounterMachine);
    expect(onN3.every((machine) => machine.state.total === 1)).toBe(true);
    nodes.hub.isolate(undefined);
    // n3's replicas campaign in vain (n1 still leads them all); their first word wakes the leaders.
    await eventually(() => onN3.every((machine) => machine.state.total === 3));
    await eventually(() => nodes.hosts.every((host) => host.stats.activeGroups === 0));
    expect(leaders.every((leader) => leader.role === 'leader')).toBe(true);
  });

  it("says whether a member holds the leader's whole log (caughtUp), for a transfer that would block proposals", async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    await leader.open(new CounterMachine());
    await leads(leader);
    await leader.propose({ add: 1 });
    await eventually(() => leader.caughtUp('n2') && leader.caughtUp('n3'));
    nodes.hub.setFilter((from, to) => from !== 'n3' && to !== 'n3');
    await leader.propose({ add: 2 });
    expect(leader.caughtUp('n2')).toBe(true);
    expect(leader.caughtUp('n3')).toBe(false);
    nodes.hub.setFilter(undefined);
    await eventually(() => leader.caughtUp('n3'));
    const follower = nodes.followers.get('g')?.[0]?.log as CounterLog;
    expect(follower.caughtUp('n3')).toBe(false); // only a leader knows
  });

  it("wakes quiesced leaders to answer a member's pre-votes in turns, campaignsPerTick a tick", async () => {
    // n3 wrongly hears n1 is down and campaigns for every group at once (a restarted node's
    // replicas do the same): n1's leaders, quiesced, wake to answer 2 a tick, not all at once.
    const paced = new ThreeNodes({ n1: 2 });
    try {
      const count = 24;
      const leaders = await groupsLedByN1(count, paced);
      let mostAwake = 0;
      const sampler = setInterval(() => {
        mostAwake = Math.max(mostAwake, paced.host(0).stats.activeGroups);
      }, 1);
      (paced.transports[2] as InProcessTransport).peerDown('n1');
      const onN3 = [...paced.followers.values()].map((pair) => pair[1]?.log as CounterLog);
      await eventually(() => onN3.every((log) => log.leader === 'n1' && log.role === 'follower'));
      await eventually(() => paced.hosts.every((host) => host.stats.activeGroups === 0));
      clearInterval(sampler);
      expect(leaders.every((leader) => leader.role === 'leader')).toBe(true);
      // n3 did campaign (its first campaigners at least: about half the groups)...
      expect(onN3.reduce((sum, log) => sum + log.preVotes, 0)).toBeGreaterThan(0);
      // ...and n1's leaders answered in their turns, each quiescing again within its tick: woken
      // at once by the pre-votes, they stayed awake until n1's next tick, all of them together.
      expect(mostAwake).toBeLessThanOrEqual(4);
    } finally {
      await paced.close();
    }
  });

  it('catches up a follower that missed entries, from a snapshot once the leader compacted', async () => {
    const leader = nodes.create<CounterCommand, CounterResult>('g', { codec: counterCodec, clock });
    const machine = new CounterMachine();
    await leader.open(machine);
    await leads(leader);
    await leader.propose({ add: 1 });
    // n3 hears nothing for a while.
    nodes.hub.setFilter((from, to) => from !== 'n3' && to !== 'n3');
    await Promise.all([2, 3, 4, 5].map((add) => leader.propose({ add })));
    await leader.compact();
    await leader.propose({ add: 6 });
    nodes.hub.setFilter(undefined);
    const lagging = nodes.followers.get('g')?.[1] as { machine: CounterMachine };
    await eventually(() => lagging.machine.state.total === 21);
    expect(lagging.machine.state).toEqual(machine.state);
    expect(lagging.machine.restored.length).toBe(1);
  });

  it("sends a lagging follower the machine's transfer payload, and stores only the metadata", async () => {
    const leader = nodes.create<CounterCommand, CounterResult>(
      'g',
      { codec: counterCodec, clock },
      () => new SideDataCounter(),
    );
    const machine = new SideDataCounter();
    await leader.open(machine);
    await leads(leader);
    await leader.propose({ add: 1 });
    nodes.hub.setFilter((from, to) => from !== 'n3' && to !== 'n3');
    await Promise.all([2, 3, 4, 5].map((add) => leader.propose({ add })));
    await leader.compact();
    await leader.propose({ add: 6 });
    expect(machine.transfers).toStrictEqual([]);
    nodes.hub.setFilter(undefined);
    const lagging = { machine: nodes.followers.get('g')?.[1]?.machine as SideDataCounter };
    await eventually(() => lagging.machine.state.total === 21);
    // Built from the snapshot at the compaction point (application index 5), installed once.
    expect(machine.transfers.map((meta) => meta.index)).toContain(5);
    expect(lagging.machine.installs.map((meta) => meta.index)).toStrictEqual([5]);
    expect(lagging.machine.restored.map((meta) => meta.index)).toStrictEqual([5]);
    // 1-5 came with the snapshot, 6 from the entry replayed after it.
    expect(lagging.machine.side).toStrictEqual([1, 2, 3, 4, 5, 6]);
    expect(lagging.machine.state).toEqual(machine.state);
    // What n3 stored is the metadata snapshot, not the transfer payload.
    const stored = nodes.stores[2]?.snapshot('g');
    expect(stored?.meta.index).toBeGreaterThan(0);
    expect(textDecoder.decode(stored?.data)).not.toContain('"side"');
    expect(textDecoder.decode(stored?.data)).toContain('"total":15');
  });

  it('campaignOnCreate: the creating replica campaigns at once, and not when it reopens stored data', async () => {
    const open = (i: number, campaignOnCreate: boolean): CounterLog => {
      const log = nodes.host(i).createLog<CounterCommand, CounterResult>('founded', counterCodec, {
        voters: nodes.ids,
        clock,
        campaignOnCreate,
      });
      void log.open(new CounterMachine()).catch(() => {});
      return log;
    };
    const first = open(0, true);
    const others = [open(1, false), open(2, false)];
    await eventually(() => first.state === 'open');
    // Standing at once, not after an election timeout (the clock has not moved): a candidate (its
    // pre-vote maybe still under way: no election counted yet), or already the leader when the
    // votes came back before it opened (storage writes pipelined).
    expect(['candidate', 'leader']).toContain(first.role);
    await leads(first);
    expect(first.elections).toBeGreaterThan(0);
    expect(others.map((log) => log.elections)).toEqual([0, 0]);
    expect((await first.propose({ add: 3 })).total).toBe(3);
    await first.close();
    const again = nodes.host(0).createLog<CounterCommand, CounterResult>('founded', counterCodec, {
      voters: nodes.ids,
      clock,
      campaignOnCreate: true,
    });
    await again.open(new CounterMachine());
    // Its log is stored: it waits for the group's leader like any replica.
    expect(again.role).toBe('follower');
  });

  it('runs many groups on the same hosts, batching their messages per peer', async () => {
    const logs = Array.from({ length: 20 }, (_, i) =>
      nodes.create<CounterCommand, CounterResult>(`g${i}`, { codec: counterCodec, clock }),
    );
    await Promise.all(logs.map((log) => log.open(new CounterMachine()).then(() => leads(log))));
    const sentBefore = nodes.host(0).stats.batchesSent;
    const results = await Promise.all(logs.map((log, i) => log.propose({ add: i })));
    expect(results.map((r) => r.total)).toEqual(logs.map((_, i) => i));
    // 20 groups' appends and commits to 2 peers, far fewer batches than 20 per peer per round.
    expect(nodes.host(0).stats.batchesSent - sentBefore).toBeLessThan(20);
  });
});

describe('RaftGroupLog over single-voter data', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'styx-raft-migrate-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a group written by SingleVoterLog, with the same indexes and timestamps', async () => {
    const clock = new ManualClock(1_000);
    let store = openLogStore(dir);
    const old = new SingleVoterLog<CounterCommand, CounterResult>('g', store, counterCodec, { clock });
    const before = new CounterMachine();
    await old.open(before);
    await Promise.all([1, 2, 3].map((add) => old.propose({ add })));
    await old.compact();
    clock.advance(10);
    await Promise.all([4, 5].map((add) => old.propose({ add })));
    await old.close();
    await store.close();

    store = openLogStore(dir);
    const host = new RaftHost({ nodeId: NODE, logStore: store });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec, { clock });
    const after = new CounterMachine();
    await log.open(after);
    expect(after.state).toEqual(before.state);
    expect(after.restored.map((meta) => meta.index)).toEqual([3]);
    expect(after.appliedIndexes).toEqual([4, 5]);
    const next = await log.propose({ add: 6 });
    expect(next.index).toBe(6);
    expect(next.total).toBe(21);
    await host.close();
    await store.close();
  });

  it('refuses single-voter data for a group opened with several voters', async () => {
    let store = openLogStore(dir);
    const old = new SingleVoterLog<CounterCommand, CounterResult>('g', store, counterCodec);
    await old.open(new CounterMachine());
    await old.propose({ add: 1 });
    await old.close();
    await store.close();
    store = openLogStore(dir);
    const host = new RaftHost({ nodeId: NODE, logStore: store });
    const log = host.createLog<CounterCommand, CounterResult>('g', counterCodec, { voters: [NODE, 'other'] });
    await expect(log.open(new CounterMachine())).rejects.toBeInstanceOf(LogCorruptedError);
    await host.close();
    await store.close();
  });
});
