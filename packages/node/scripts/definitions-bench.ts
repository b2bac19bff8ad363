/**
 * Time of a definitions import and export through the management API against topology size.
 *
 *   npx -y pnpm@10 exec node packages/node/scripts/definitions-bench.ts [--queues 1000,5000] [--durable]
 *
 * For each size N: a fresh node alone (in memory, or with `--durable` on a data dir in a temp dir,
 * as `styx server --data-dir` runs: LMDB logs), its management server on 127.0.0.1, and a file of
 * one vhost with N durable queues, N/10 topic exchanges and N bindings (each queue bound to one
 * exchange). Reported: the file's size, the import (POST /api/definitions: check, trial, apply),
 * a second import of the same file (nothing to change), and the export (GET /api/definitions).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Broker } from '../src/broker/broker.ts';
import { silentLogger } from '../src/logging/logger.ts';
import { ManagementServer } from '../src/management/management-server.ts';
import type { NodeStorage } from '../src/storage/node-storage.ts';
import { openNodeStorage } from '../src/storage/node-storage.ts';

const { values } = parseArgs({
  options: {
    queues: { type: 'string', default: '1000,5000' },
    durable: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'definitions-bench.ts [--queues N,N,...] [--durable]: time definitions import and export by topology size\n',
  );
  process.exit(0);
}

function definitions(queues: number): unknown {
  const exchanges = Math.max(1, Math.floor(queues / 10));
  return {
    vhosts: [{ name: 'bench' }],
    permissions: [{ user: 'guest', vhost: 'bench', configure: '.*', write: '.*', read: '.*' }],
    exchanges: Array.from({ length: exchanges }, (_, i) => ({
      name: `x.${i}`,
      vhost: 'bench',
      type: 'topic',
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: {},
    })),
    queues: Array.from({ length: queues }, (_, i) => ({
      name: `q.${i}`,
      vhost: 'bench',
      durable: true,
      auto_delete: false,
      arguments: { 'x-dead-letter-exchange': 'x.0', 'x-message-ttl': 60_000 },
    })),
    bindings: Array.from({ length: queues }, (_, i) => ({
      source: `x.${i % exchanges}`,
      vhost: 'bench',
      destination: `q.${i}`,
      destination_type: 'queue',
      routing_key: `orders.${i}.#`,
      arguments: {},
    })),
  };
}

async function timed(what: string, run: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const response = await run();
  const text = await response.text();
  const ms = performance.now() - started;
  if (!response.ok) throw new Error(`${what}: ${response.status} ${text.slice(0, 300)}`);
  return ms;
}

const auth = { Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` };

for (const n of values.queues.split(',').map(Number)) {
  const dir = values.durable ? mkdtempSync(join(tmpdir(), 'styx-definitions-bench-')) : undefined;
  let storage: NodeStorage | undefined;
  if (dir !== undefined) storage = await openNodeStorage(dir);
  const broker = await Broker.start({
    nodeName: 'bench',
    logger: silentLogger(),
    memoryBudgetBytes: 0,
    ...(storage === undefined ? {} : { storage }),
  });
  const server = new ManagementServer({ broker, logger: silentLogger() });
  await server.start('127.0.0.1', 0);
  const url = `${server.url as string}/api/definitions`;
  const body = JSON.stringify(definitions(n));
  const post = () =>
    fetch(url, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body });
  const first = await timed('import', post);
  const again = await timed('re-import', post);
  let exportBytes = 0;
  const exported = await timed('export', async () => {
    const response = await fetch(url, { headers: auth });
    exportBytes = Number(response.headers.get('content-length') ?? 0);
    return response;
  });
  process.stdout.write(
    `${n} queues (${values.durable ? 'durable' : 'in memory'}): file ${(body.length / 1024).toFixed(0)} KiB; ` +
      `import ${first.toFixed(0)} ms (${((first / n) * 1000).toFixed(0)} µs/queue), ` +
      `re-import ${again.toFixed(0)} ms, export ${exported.toFixed(0)} ms (${(exportBytes / 1024).toFixed(0)} KiB)\n`,
  );
  await server.close();
  await broker.shutdown();
  await storage?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
