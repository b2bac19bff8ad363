/**
 * `node bench/src/connection-storm.ts [CONNECTIONS] [--target styx|styx-amqp|rabbitmq|both|all]`: a reconnection
 * storm (issue 28 item 8). When a node dies its clients all reconnect to the others at once; this
 * opens CONNECTIONS (default 1,000) connections at once as guest, each with a channel, its own
 * non-durable queue and a consumer on it, and reports the time until the last consumer is ready
 * and the broker's CPU time over it (/proc/<pid>/stat). Then it closes them all and does it again:
 * the second storm is the same clients coming back (a node restarted, a flapping network).
 *
 * The broker is one `styx server` (fresh temp data dir) or, with `--target rabbitmq` and RabbitMQ
 * installed (`bash bench/scripts/rabbitmq.sh install`), one RabbitMQ node; `styx-amqp` is Styx again
 * with its clients on amqplib over AMQP 0-9-1; `both` (styx and rabbitmq, the default when RabbitMQ is
 * installed), `all` or a comma list run them in turn, one alive at a time.
 */
import { parseArgs } from 'node:util';
import type { BrokerAdapter } from './adapters/adapter.ts';
import type { BenchConnection } from './adapters/client-api.ts';
import { ADAPTERS } from './adapters/registry.ts';
import type { BrokerUnderTest, Target } from './brokers/broker.ts';
import { TARGET_LABELS } from './brokers/broker.ts';
import { LAUNCHERS } from './brokers/launchers.ts';
import { generatorCpuMs, processTreeCpuMs } from './brokers/process-stats.ts';
import { rabbitMqInstalled } from './brokers/rabbitmq-broker.ts';
import { parseTargets, TARGET_SYNOPSIS } from './target-arg.ts';

interface Storm {
  readonly wallMs: number;
  readonly brokerCpuMs: number;
  readonly generatorCpuMs: number;
}

function brokerCpuMs(broker: BrokerUnderTest): number {
  // Every process of the broker (RabbitMQ's beam.smp and its helpers, Styx's node).
  return processTreeCpuMs(broker.pids) ?? 0;
}

/** Open `count` connections at once, each with a channel, a queue and a consumer; close them after. */
async function storm(
  broker: BrokerUnderTest,
  adapter: BrokerAdapter,
  count: number,
  run: number,
): Promise<Storm> {
  const cpu = brokerCpuMs(broker);
  const generator = generatorCpuMs();
  const start = performance.now();
  const connections = await Promise.all(
    Array.from({ length: count }, async (_, i): Promise<BenchConnection> => {
      const connection = await adapter.connect(broker.url);
      connection.on('error', () => {});
      const channel = await connection.createChannel();
      const queue = `storm-${run}-${i}`;
      await channel.assertQueue(queue, { durable: false });
      await channel.consume(queue, () => {}, { noAck: true });
      return connection;
    }),
  );
  const result = {
    wallMs: performance.now() - start,
    brokerCpuMs: brokerCpuMs(broker) - cpu,
    generatorCpuMs: generatorCpuMs() - generator,
  };
  // Non-durable queues of a closed connection stay; they are few and the broker is thrown away.
  await Promise.all(connections.map((c) => c.close().catch(() => {})));
  return result;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { target: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help === true) {
    process.stdout.write(
      `Usage: node bench/src/connection-storm.ts [CONNECTIONS] [--target styx|styx-amqp|rabbitmq|both|all]\n\n--target: ${TARGET_SYNOPSIS} (default: both when RabbitMQ is installed, else styx)\n`,
    );
    return;
  }
  const count = Number(positionals.find((p) => p !== '--') ?? 1_000);
  if (!Number.isSafeInteger(count) || count < 1) {
    process.stderr.write(
      `connection-storm: CONNECTIONS must be a positive integer, got '${positionals[0]}'\n`,
    );
    process.exit(2);
  }
  let targets: Target[];
  try {
    targets = parseTargets(values.target ?? (rabbitMqInstalled() ? 'both' : 'styx'));
  } catch (err) {
    process.stderr.write(`connection-storm: ${(err as Error).message}\n`);
    process.exit(2);
  }
  for (const t of targets) {
    const broker = await LAUNCHERS[t](1);
    try {
      for (const [run, name] of [
        [1, 'first storm'],
        [2, 'second storm (same clients again)'],
      ] as const) {
        const s = await storm(broker, ADAPTERS[t], count, run);
        process.stdout.write(
          `${TARGET_LABELS[t]} ${broker.version}, ${name}: ${count} connections + channel + queue + consumer ` +
            `in ${(s.wallMs / 1000).toFixed(2)} s; broker CPU ${(s.brokerCpuMs / 1000).toFixed(2)} s ` +
            `(${((s.brokerCpuMs * 1000) / count).toFixed(0)} µs per connection), load generator ${(s.generatorCpuMs / 1000).toFixed(2)} s\n`,
        );
      }
    } finally {
      await broker.stop();
    }
  }
}

await main();
