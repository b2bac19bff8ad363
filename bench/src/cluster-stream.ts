/**
 * `node bench/src/cluster-stream.ts [MESSAGES] [BYTES]`: the cost of the cluster link itself (issue
 * 28 item 2). Two cluster hosts built by packages/node's `createClusterNode` (the same TCP,
 * connection protection, noise and yamux stack a `styx server` runs) in this one process, on
 * loopback; one opens a stream and writes MESSAGES writes of BYTES bytes (defaults 100,000 × 256,
 * then the same bytes as 64 KiB writes), the other reads them. Reports MB/s and, since the machine
 * may be shared and both ends run here, the process CPU time per write and per MB (user + system,
 * `process.cpuUsage()`), which is what the cipher work shows up in. Each figure is the median of
 * `ROUNDS` runs after a warm-up.
 */
import { listenAddress, peerMultiaddr } from '@styx/node/internal/cluster';
import { startClusterHostPair } from './cluster-host-pair.ts';

const PROTOCOL = '/styx-bench/stream/1';
const SECRET = 'the cluster stream bench secret';
/** Runs per figure; the median one is reported (a shared machine's noise is one-sided). */
const ROUNDS = 5;

interface Figures {
  readonly writes: number;
  readonly bytes: number;
  readonly wallMs: number;
  readonly cpuUs: number;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => a !== '--');
  if (args[0] === '-h' || args[0] === '--help') {
    process.stdout.write(
      'Usage: node bench/src/cluster-stream.ts [MESSAGES] [BYTES]  (default 100000 256)\n',
    );
    return;
  }
  const messages = Number(args[0] ?? 100_000);
  const size = Number(args[1] ?? 256);
  const hosts = await startClusterHostPair('cluster-stream', SECRET);
  const { a, b } = hosts;
  let received = 0;
  let onBytes = (): void => {};
  await b.handle(PROTOCOL, (stream) => {
    stream.addEventListener('message', (event) => {
      received += event.data.byteLength;
      onBytes();
    });
  });
  try {
    const stream = await a.dialProtocol(peerMultiaddr(listenAddress(b), b.peerId), PROTOCOL);
    const run = async (count: number, bytes: number): Promise<Figures> => {
      const chunk = new Uint8Array(bytes).fill(7);
      const target = received + count * bytes;
      const done = new Promise<void>((resolve) => {
        onBytes = () => {
          if (received >= target) resolve();
        };
      });
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < count; i++) {
        if (!stream.send(chunk)) await stream.onDrain();
      }
      await done;
      const used = process.cpuUsage(cpu);
      return {
        writes: count,
        bytes: count * bytes,
        wallMs: performance.now() - start,
        cpuUs: used.user + used.system,
      };
    };
    await run(Math.min(20_000, messages), size); // warm-up: JIT, windows
    const median = async (count: number, bytes: number): Promise<Figures> => {
      const runs: Figures[] = [];
      for (let i = 0; i < ROUNDS; i++) runs.push(await run(count, bytes));
      runs.sort((x, y) => x.cpuUs - y.cpuUs);
      return runs[Math.floor(ROUNDS / 2)] as Figures;
    };
    const small = await median(messages, size);
    const bulk = await median(Math.max(1, Math.round((messages * size) / 65_536)), 65_536);
    for (const [name, f] of [
      [`${size} B writes`, small],
      ['64 KiB writes', bulk],
    ] as const) {
      const mb = f.bytes / 1e6;
      process.stdout.write(
        `${name} (median of ${ROUNDS}): ${f.writes} writes, ${mb.toFixed(1)} MB in ${(f.wallMs / 1000).toFixed(2)} s = ` +
          `${(mb / (f.wallMs / 1000)).toFixed(1)} MB/s; CPU ${(f.cpuUs / f.writes).toFixed(2)} µs/write, ` +
          `${(f.cpuUs / 1000 / mb).toFixed(1)} ms/MB\n`,
      );
    }
    await stream.close();
  } finally {
    await hosts.stop();
  }
}

await main();
