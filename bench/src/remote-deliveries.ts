/**
 * `node bench/src/remote-deliveries.ts [DELIVERIES]`: the cost of handing deliveries to
 * a consumer on another node (issue 28 item 1), the queue link's part alone. Two cluster hosts built
 * by packages/node's `createClusterNode` (TCP, connection protection, noise, yamux, as `styx server`
 * runs them) in this one process on loopback, each with a queue link; one sends DELIVERIES encoded
 * deliveries of a 1 KiB message (default 100,000) in turns of 100 (what one commit of 100 acks frees
 * for a consumer with a full prefetch), at most 10 turns unanswered, and the other
 * decodes each. Three ways, alternating: as before batching (a call per delivery, queue-link op 3,
 * each delivery encoded whole with its owner and tag strings), a call per delivery as this build
 * sends them with the feature flag `batched_remote_sends` off (owner and tag bytes kept, the body
 * in parts), and a turn's deliveries in one call (op 9, the flag on). Reports deliveries/s and
 * the process CPU time per delivery (user + system: both ends run here), each the median of
 * `ROUNDS` runs after a warm-up, since the machine may be shared.
 */
import { silentLogger } from '@styx/node';
import type { BatchedOutcome } from '@styx/node/internal/cluster';
import {
  DeliveryEncoder,
  decodeBatch,
  decodeDelivery,
  encodeBatchAnswer,
  encodeDelivery,
  listenAddress,
  QueueLink,
  QueueOp,
  RemoteSendBatches,
} from '@styx/node/internal/cluster';
import { startClusterHostPair } from './cluster-host-pair.ts';
import { parseCountArgs } from './count-arg.ts';

const SECRET = 'the remote deliveries bench secret';
/** Runs per figure; the median one is reported (a shared machine's noise is one-sided). */
const ROUNDS = 5;
/** Turns sent and not yet answered, at most (a consumer's prefetch of 1,000 in turns of 100). */
const TURNS_IN_FLIGHT = 10;
const GROUP = 'q.bench-remote-deliveries';
const OWNER = 'styx-bench-2:AbCdEf.1/1';
const TAG = 'amq.ctag-bench-remote-deliveries';

type Mode = 'as before: one call per delivery, encoded whole' | 'one call per delivery' | 'one call per turn';
const MODES: readonly Mode[] = [
  'as before: one call per delivery, encoded whole',
  'one call per delivery',
  'one call per turn',
];

interface Figures {
  readonly deliveries: number;
  readonly wallMs: number;
  readonly cpuUs: number;
}

/** Deliveries per turn: what one commit of 100 acks frees for a consumer with a full prefetch. */
const PER_TURN = 100;

async function main(): Promise<void> {
  const args = parseCountArgs(process.argv.slice(2), 100_000);
  if ('error' in args) {
    process.stderr.write(`remote-deliveries: ${args.error}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write('Usage: node bench/src/remote-deliveries.ts [DELIVERIES]  (default 100000)\n');
    return;
  }
  const total = args.count;
  const perTurn = PER_TURN;
  const logger = silentLogger();
  const hosts = await startClusterHostPair('remote-deliveries', SECRET);
  const { a, b } = hosts;
  const links = await Promise.all([a, b].map((node) => QueueLink.start({ node, logger, admit: () => true })));
  const [leader, consumerNode] = links as [QueueLink, QueueLink];
  try {
    const peer = b.peerId.toString();
    leader.addPeer(peer, listenAddress(b));
    let received = 0;
    consumerNode.handle((op, _group, body) => {
      if (op === QueueOp.deliver) {
        decodeDelivery(body);
        received++;
        return new Uint8Array(0);
      }
      const outcomes: BatchedOutcome[] = decodeBatch(body).map((send) => {
        decodeDelivery(send.body);
        received++;
        return { ok: true };
      });
      return encodeBatchAnswer(outcomes);
    });
    const batches = new RemoteSendBatches((node, op, group, body) =>
      leader.call(node, op, group, body, 10_000),
    );
    const deliveries = new DeliveryEncoder(OWNER);
    const message = {
      exchange: '',
      routingKey: GROUP,
      properties: {},
      body: new Uint8Array(1024).fill(7),
      bcc: undefined,
    };
    let nextId = 1;
    const run = async (mode: Mode, count: number): Promise<Figures> => {
      const before = received;
      const inFlight: Promise<unknown>[] = [];
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let sent = 0; sent < count; ) {
        const turn: Promise<unknown>[] = [];
        for (let i = 0; i < perTurn && sent < count; i++, sent++) {
          const id = nextId++;
          if (mode === 'as before: one call per delivery, encoded whole') {
            const body = encodeDelivery(OWNER, TAG, id, false, 0, message);
            turn.push(leader.call(peer, QueueOp.deliver, GROUP, body, 10_000));
            continue;
          }
          const body = deliveries.encode(TAG, id, false, 0, message);
          turn.push(
            mode === 'one call per turn'
              ? batches.send(peer, QueueOp.deliver, GROUP, body)
              : leader.call(peer, QueueOp.deliver, GROUP, body, 10_000),
          );
        }
        inFlight.push(Promise.all(turn));
        // The next turn is another event-loop turn, as a leader's next commit is.
        if (inFlight.length >= TURNS_IN_FLIGHT) await inFlight.shift();
        else await new Promise<void>((resolve) => setImmediate(resolve));
      }
      await Promise.all(inFlight);
      const used = process.cpuUsage(cpu);
      if (received - before !== count) throw new Error(`${received - before} of ${count} deliveries arrived`);
      return { deliveries: count, wallMs: performance.now() - start, cpuUs: used.user + used.system };
    };
    for (const mode of MODES) await run(mode, Math.min(20_000, total)); // warm-up: JIT, windows
    const runs = new Map<Mode, Figures[]>(MODES.map((m) => [m, []]));
    for (let r = 0; r < ROUNDS; r++) for (const mode of MODES) runs.get(mode)?.push(await run(mode, total));
    for (const mode of MODES) {
      const sorted = [...(runs.get(mode) ?? [])].sort((x, y) => x.cpuUs - y.cpuUs);
      const f = sorted[Math.floor(ROUNDS / 2)] as Figures;
      process.stdout.write(
        `${mode} (${perTurn} per turn, median of ${ROUNDS}): ${f.deliveries} deliveries in ` +
          `${(f.wallMs / 1000).toFixed(2)} s = ${Math.round(f.deliveries / (f.wallMs / 1000))}/s; ` +
          `CPU ${(f.cpuUs / f.deliveries).toFixed(2)} µs/delivery\n`,
      );
    }
  } finally {
    await Promise.all(links.map((l) => l.close()));
    await hosts.stop();
  }
}

await main();
