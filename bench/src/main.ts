/**
 * `pnpm bench`: Styx side by side with RabbitMQ on the scenarios of issue 6 (see README.md beside
 * this folder). Prints a live progress line on stderr and the tables on stdout, and writes
 * results/<timestamp>/{report.json, report.md, lateness.svg}.
 */
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Target } from './brokers/broker.ts';
import { RABBITMQ_SCRIPT, rabbitMqInstalled } from './brokers/rabbitmq-broker.ts';
import { REPO_ROOT } from './brokers/styx-node.ts';
import { buildReport, writeReport } from './report/build-report.ts';
import { headlineTables } from './report/cpu-table.ts';
import { textTable } from './report/format.ts';
import { problemsList, ratiosTable, resultsTable } from './report/table.ts';
import { ProgressLine } from './runner/progress-line.ts';
import { liveBrokers, runBench } from './runner/run-bench.ts';
import { SCENARIOS, selectCases } from './scenarios/registry.ts';
import { FULL_SIZES, QUICK_SIZES, withMessageCount, withQueueCount } from './scenarios/sizes.ts';
import { defaultTargets, parseTargets } from './target-arg.ts';

const USAGE = `Usage: pnpm bench [scenario ...] [options]

Scenarios (default: a–f, and g with --full): a letter (c), a name (hot-expiry), a case id or
prefix (c.burst, d.reject.at-least-once), or a group: scaling (h–k: queues, connections, message
size, cluster size), leads (e, l, n, o), extras (h–o). h–o run only when named. --list shows them all.

Options:
  --full                 the issue's sizes (100k messages, 1M for memory and restart, 60 s TTL, 8 s sweep
                         points up to 1,000 queues/connections and 5 nodes)
  --quick                CI-sized runs (the default): ~1.5 min for a–f per broker column
  --target T             which brokers run, in turn: styx (Styx through its SDK), styx-amqp (Styx
                         through amqplib over AMQP 0-9-1), rabbitmq (through amqplib), both (styx,
                         rabbitmq), all, or a comma list (styx,styx-amqp). Default: all, without
                         rabbitmq when it is not installed
  --json PATH            also write the JSON report to PATH
  --out DIR              where report.json, report.md and lateness.svg go (default: bench/results/<timestamp>)
  --messages N           override every case's message count (a, b, c, d)
  --queues N             override the queue count of n (idle queues) and o (failover), e.g. o at 10,000
  --stall-timeout S      fail a case after S seconds without progress (default: 30)
  --list                 list the scenarios and cases, and exit
  -h, --help             this help

RabbitMQ: 'bash bench/scripts/rabbitmq.sh install' (root) installs Debian's rabbitmq-server.`;

/** A whole case may take at most this long in quick / full mode, ms (beyond the stall checks). */
const CASE_TIMEOUT_MS = { quick: 5 * 60_000, full: 30 * 60_000 } as const;

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function timestampDir(d: Date): string {
  return d.toISOString().replace(/[:.]/g, '-');
}

async function main(argv: string[]): Promise<number> {
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  let parsed: ReturnType<typeof parse>;
  function parse(a: string[]) {
    return parseArgs({
      args: a,
      allowPositionals: true,
      strict: true,
      options: {
        full: { type: 'boolean' },
        quick: { type: 'boolean' },
        target: { type: 'string' },
        json: { type: 'string' },
        out: { type: 'string' },
        messages: { type: 'string' },
        queues: { type: 'string' },
        'stall-timeout': { type: 'string' },
        list: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  }
  try {
    parsed = parse(args);
  } catch (err) {
    fail((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.full === true && values.quick === true) fail('--full and --quick exclude each other');
  let sizes = values.full ? FULL_SIZES : QUICK_SIZES;
  if (values.messages !== undefined) {
    if (!/^[1-9]\d*$/.test(values.messages)) fail(`--messages must be a positive whole number`);
    sizes = withMessageCount(sizes, Number(values.messages));
  }
  if (values.queues !== undefined) {
    if (!/^[1-9]\d*$/.test(values.queues)) fail(`--queues must be a positive whole number`);
    sizes = withQueueCount(sizes, Number(values.queues));
  }
  if (values.list) {
    for (const s of SCENARIOS) {
      process.stdout.write(`${s.id}. ${s.name}: ${s.title}\n`);
      for (const c of s.cases(sizes)) process.stdout.write(`     ${c.id}  (${c.title})\n`);
    }
    return 0;
  }
  const stallS = values['stall-timeout'] === undefined ? 30 : Number(values['stall-timeout']);
  if (!Number.isFinite(stallS) || stallS <= 0) fail('--stall-timeout must be a positive number of seconds');

  const progress = new ProgressLine();
  const notes: string[] = [];
  let targets: Target[];
  if (values.target === undefined) {
    targets = defaultTargets(rabbitMqInstalled());
    if (!targets.includes('rabbitmq')) {
      const note = `RabbitMQ is not installed, so Styx runs alone (install it: bash ${RABBITMQ_SCRIPT} install)`;
      progress.log(note);
      notes.push(note);
    }
  } else {
    try {
      targets = parseTargets(values.target);
    } catch (err) {
      fail(`${(err as Error).message}`);
    }
  }
  let cases: ReturnType<typeof selectCases>;
  try {
    cases = selectCases(positionals, sizes);
  } catch (err) {
    fail((err as Error).message);
  }

  const startedAt = new Date();
  const outDir = resolve(values.out ?? join(REPO_ROOT, 'bench', 'results', timestampDir(startedAt)));
  const interrupt = (): void => {
    progress.log('interrupted: stopping the brokers');
    void Promise.all([...liveBrokers].map((b) => b.stop())).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  progress.log(
    `${sizes.mode} run of ${cases.length} cases on ${targets.join(' then ')}; results in ${outDir}`,
  );
  const { results, brokers } = await runBench({
    targets,
    cases,
    progress,
    stallTimeoutMs: stallS * 1000,
    caseTimeoutMs: CASE_TIMEOUT_MS[sizes.mode] + sizes.longTtlMs,
  });
  const report = buildReport({
    startedAt,
    sizes,
    targets,
    brokers,
    results,
    repoRoot: REPO_ROOT,
    extraNotes: notes,
  });
  await writeReport(report, outDir, values.json === undefined ? undefined : resolve(values.json));

  process.stdout.write(`\n${resultsTable(results)}\n`);
  for (const f of headlineTables(results))
    process.stdout.write(`\n${f.title}\n${textTable(f.header, f.rows)}\n`);
  if (report.ratios.length > 0) process.stdout.write(`\nStyx / RabbitMQ\n${ratiosTable(report.ratios)}\n`);
  const problems = problemsList(results);
  if (problems !== '') process.stdout.write(`\nNot run to the end:\n${problems}\n`);
  for (const n of report.notes) process.stdout.write(`\nNote: ${n}\n`);
  process.stdout.write(`\nReport: ${join(outDir, 'report.md')}\n`);
  return results.some((r) => r.status === 'error') ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
    void Promise.all([...liveBrokers].map((b) => b.stop())).finally(() => process.exit(1));
  },
);
