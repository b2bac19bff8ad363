/** report.md: the run's context, the Styx/RabbitMQ ratios, every case's numbers, and what did not run. */
import { TARGET_LABELS, TARGETS } from '../brokers/broker.ts';
import type { BenchReport, CaseResult } from '../runner/results.ts';
import { SCENARIOS } from '../scenarios/registry.ts';
import type { Metric } from '../scenarios/scenario.ts';
import { comparisonCells, comparisonHeader, ratioColumns, STYX_CLIENT } from './columns.ts';
import { headlineTables } from './cpu-table.ts';
import { formatCpu, formatNodeCpu, formatRatio, formatValue } from './format.ts';
import { headlineOf } from './headline.ts';
import { leadTable } from './leads.ts';
import { scalingPanels, soakPanels } from './scaling-chart.ts';

/** RabbitMQ 3.10.8 as the issue measured it on this machine kind, for context next to this run. */
export const RABBITMQ_REFERENCE = [
  'a: 26–28k msgs/s',
  'b: 31–66k msgs/s',
  'c burst: 12.7–17.1k msgs/s at-most-once, 5.7–8.0k at-least-once',
  'c stream at full speed: lateness grows to 2–3 s (at-most-once) and 10–12 s (at-least-once)',
  'd: 10.8–13.6k msgs/s at-most-once, 4.4–7.7k at-least-once with a 6–12 s backlog',
  'e: the short messages expire 59.9 s late (head-of-line), classic and quorum alike',
];

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function mdTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${header.map(cell).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`),
  ].join('\n');
}

function verdictText(v: string): string {
  return v === 'better' ? 'Styx better' : v === 'worse' ? 'Styx worse' : v;
}

/** Every metric of a case, one column per broker column of the run, plus the ratios where both sides ran. */
function caseTable(report: BenchReport, caseId: string): string {
  const runs = report.results.filter((r) => r.caseId === caseId);
  const targets = TARGETS.filter((t) => report.targets.includes(t));
  const keys: Metric[] = [];
  for (const r of runs) for (const m of r.metrics) if (!keys.some((k) => k.key === m.key)) keys.push(m);
  const rows = keys.map((k) => {
    const cells = comparisonCells(
      targets,
      (t) => {
        const r = runs.find((x) => x.target === t);
        if (r === undefined) return undefined;
        // A case that did not run says so in its column.
        if (r.status !== 'ok') return { text: r.status };
        const m = r.metrics.find((x) => x.key === k.key);
        return m === undefined ? undefined : { value: m.value, text: formatValue(m.value, m.unit) };
      },
      k.better,
    );
    return [`${k.label} (${k.unit})`, ...(cells ?? targets.map(() => ''))];
  });
  const ratioBlanks = ratioColumns(targets).map(() => '');
  const cpuRow = (label: string, pick: (r: CaseResult) => string): string[] => [
    label,
    ...targets.map((t) => {
      const r = runs.find((x) => x.target === t);
      return r?.cpu == null ? '' : pick(r);
    }),
    ...ratioBlanks,
  ];
  rows.push(
    cpuRow('broker CPU (share of wall)', (r) => formatCpu(r.cpu?.brokerMs ?? null, r.cpu?.wallMs ?? 0)),
  );
  if (runs.some((r) => (r.cpu?.brokerNodesMs?.length ?? 0) > 1)) {
    rows.push(
      cpuRow('broker CPU per node (node 1 / 2 / …)', (r) =>
        formatNodeCpu(r.cpu?.brokerNodesMs, headlineOf(r).cpuPerMessage?.value),
      ),
    );
  }
  rows.push(
    cpuRow('generator CPU (share of wall)', (r) => formatCpu(r.cpu?.generatorMs ?? null, r.cpu?.wallMs ?? 0)),
  );
  rows.push(cpuRow('wall time', (r) => `${((r.cpu?.wallMs ?? 0) / 1000).toFixed(1)} s`));
  return mdTable(comparisonHeader('metric', targets), rows);
}

export function markdownReport(report: BenchReport): string {
  const out: string[] = [];
  out.push(`# Styx benchmark, ${report.startedAt}`);
  out.push('');
  out.push(
    `Mode **${report.mode}**; brokers: ${report.brokers.map((b) => `${TARGET_LABELS[b.target]} ${b.version}`).join(', ') || 'none'}; ` +
      `host: ${report.host.cpus} × ${report.host.cpuModel}, ${report.host.memoryGiB} GiB, Node ${report.host.node}` +
      (report.host.gitCommit === null ? '' : `, commit ${report.host.gitCommit.slice(0, 12)}`) +
      '. One broker alive at a time. RabbitMQ runs quorum queues; Styx durable queues (synced before confirm), ' +
      "through its SDK (WebSocket) in the Styx column and through amqplib over AMQP 0-9-1 (RabbitMQ's client " +
      'code) in the Styx AMQP column. ' +
      '1 KiB persistent messages (j varies the size). Broker and generator CPU times cover the whole case, setup ' +
      'included (µs/msg covers only the measured window); a generator near 100 % of ' +
      'one core is saturated and the rate is a lower bound.',
  );
  if (report.notes.length > 0) {
    out.push('');
    for (const n of report.notes) out.push(`- ${n}`);
  }
  const figures = headlineTables(report.results);
  if (figures.length > 0) {
    out.push('', '## CPU per message and throughput', '');
    out.push(
      'Broker CPU (user + system of every broker process: each node; beam.smp and its helpers) over ' +
        "each case's measured window, divided by the messages it moved (µs/msg, lower is better), " +
        'then the rate (msg/s). A ratio is Styx / RabbitMQ; where the Styx AMQP column ran, ' +
        '"same client" is amqplib over AMQP against both brokers, the ratio that counts (issue 28), ' +
        "and AMQP/SDK is the protocol's own cost on Styx.",
    );
    for (const f of figures) out.push('', `**${f.title}**`, '', mdTable(f.header, f.rows));
  }
  const leads = leadTable(report.results);
  if (leads.rows.length > 0) {
    out.push('', '## Leads to keep', '');
    out.push(
      'Where Styx leads today (issue 28 asks to keep it): idle queues (n), failover (o), ' +
        'head-of-line expiry (e), restart with a full queue (l).',
      '',
    );
    out.push(mdTable(leads.header, leads.rows));
  }
  if (report.ratios.length > 0) {
    out.push('', '## Styx / RabbitMQ', '');
    out.push(
      mdTable(
        ['case', 'metric', 'Styx client', 'Styx', 'RabbitMQ', 'ratio', ''],
        report.ratios.map((q) => [
          q.caseId,
          q.label,
          STYX_CLIENT[q.target],
          formatValue(q.styx, q.unit),
          formatValue(q.rabbitmq, q.unit),
          formatRatio(q.ratio),
          verdictText(q.verdict),
        ]),
      ),
    );
  }
  out.push('', '## Results', '');
  for (const s of SCENARIOS) {
    const caseIds = [...new Set(report.results.filter((r) => r.scenario === s.id).map((r) => r.caseId))];
    if (caseIds.length === 0) continue;
    out.push(`### ${s.id}. ${s.title}`, '');
    for (const id of caseIds) {
      const first = report.results.find((r) => r.caseId === id);
      const params = Object.entries(first?.params ?? {})
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      out.push(`**${id}** (${first?.title ?? ''}; ${params})`, '');
      out.push(caseTable(report, id), '');
      for (const r of report.results.filter((x) => x.caseId === id))
        for (const n of r.notes) out.push(`- ${TARGET_LABELS[r.target]}: ${n}`);
      if (report.results.some((x) => x.caseId === id && x.notes.length > 0)) out.push('');
    }
  }
  const problems = report.results.filter((r) => r.status !== 'ok');
  if (problems.length > 0) {
    out.push('## Not run to the end', '');
    out.push(
      mdTable(
        ['case', 'broker', 'status', 'why'],
        problems.map((r) => [
          r.caseId,
          TARGET_LABELS[r.target],
          r.status,
          (r.reason ?? '').split('\n')[0] ?? '',
        ]),
      ),
      '',
    );
  }
  out.push('## Lateness', '', '![Lateness distributions](lateness.svg)', '');
  if (scalingPanels(report.results).length > 0)
    out.push('## Scaling', '', '![Throughput and CPU per message as each dimension grows](scaling.svg)', '');
  if (soakPanels(report.results).length > 0)
    out.push('## Soak', '', '![Resident memory over the publish/drain cycles](soak.svg)', '');
  out.push('## Reference: RabbitMQ 3.10.8 on this machine kind (from the issue; runs vary ±30 %)', '');
  for (const r of RABBITMQ_REFERENCE) out.push(`- ${r}`);
  out.push('');
  return out.join('\n');
}
