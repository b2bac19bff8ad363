// Overview: totals and their rates sampled in the page, the cluster's nodes, and alarms.
import { apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { LineChart, rates, useSamples } from '../chart.tsx';
import { count, text } from '../format.ts';
import { useApi } from '../hooks.ts';
import type { JsonObject, NodeInfo } from '../model.ts';
import { Badge, ErrorNote, Facts, Loading, Page, Panel, Table } from '../widgets.tsx';

interface Overview {
  readonly node: string;
  readonly product_version: string | null;
  readonly object_totals: { connections: number; exchanges: number; queues: number; consumers: number };
  readonly queue_totals: { messages: number; messages_ready: number; messages_unacknowledged: number };
  readonly alarms: readonly JsonObject[];
  readonly message_stats?: Record<string, unknown>;
}

/** RabbitMQ's cumulative message counters the overview may carry, by the name a chart shows. */
const COUNTERS: readonly (readonly [string, string])[] = [
  ['publish', 'published'],
  ['deliver_get', 'delivered'],
  ['ack', 'acked'],
  ['redeliver', 'redelivered'],
];

function counter(o: Overview, key: string): number | undefined {
  const v = o.message_stats?.[key];
  return typeof v === 'number' ? v : undefined;
}

export function OverviewPage() {
  const caps = useCaps();
  const overview = useApi<Overview>(apiPath('overview'), 5000);
  const nodes = useApi<NodeInfo[]>(caps.nodes ? apiPath('nodes') : undefined, 10_000);
  const samples = useSamples(overview.data);
  const o = overview.data;
  if (o === undefined)
    return overview.error === undefined ? <Loading /> : <ErrorNote error={overview.error} />;
  const kept = COUNTERS.filter(([key]) => counter(o, key) !== undefined);
  return (
    <Page title="Overview">
      <ErrorNote error={overview.error} />
      <div class="cards">
        <Facts
          rows={[
            ['Node', o.node],
            ['Version', o.product_version ?? '–'],
            ['Queues', count(o.object_totals.queues)],
            ['Exchanges', count(o.object_totals.exchanges)],
            ['Consumers', count(o.object_totals.consumers)],
            ['Connections', count(o.object_totals.connections)],
            ['Messages', count(o.queue_totals.messages)],
            ['Ready', count(o.queue_totals.messages_ready)],
            ['Unacked', count(o.queue_totals.messages_unacknowledged)],
          ]}
        />
        <LineChart
          title="Queued messages (sampled every 5 s)"
          series={[
            { name: 'ready', values: samples.map((s) => s.value.queue_totals.messages_ready) },
            { name: 'unacked', values: samples.map((s) => s.value.queue_totals.messages_unacknowledged) },
          ]}
        />
        {kept.length > 0 ? (
          <LineChart
            title="Message rates (queues with a replica on this node)"
            unit="/s"
            series={kept.map(([key, name]) => ({
              name,
              values: rates(samples, (v) => counter(v, key) ?? 0),
            }))}
          />
        ) : null}
      </div>
      {caps.nodes ? (
        <Panel title="Nodes">
          <ErrorNote error={nodes.error} />
          <Table
            rows={nodes.data ?? []}
            rowKey={(n) => n.id}
            columns={[
              { key: 'name', title: 'Name', render: (n) => n.name, sortValue: (n) => n.name },
              {
                key: 'running',
                title: 'State',
                render: (n) =>
                  n.running ? <Badge kind="ok">online</Badge> : <Badge kind="warn">offline</Badge>,
              },
              {
                key: 'role',
                title: 'Metadata',
                render: (n) => (n.is_metadata_leader ? 'leader' : n.metadata_role),
              },
            ]}
          />
        </Panel>
      ) : null}
      <Panel title="Alarms">
        <Table
          testId="alarms"
          rows={o.alarms}
          rowKey={(a) => JSON.stringify(a)}
          empty="No alarms."
          columns={[
            { key: 'type', title: 'Alarm', render: (a) => text(a.type) },
            { key: 'where', title: 'Where', render: (a) => `${text(a.vhost)} ${text(a.queue)}` },
            { key: 'detail', title: 'Detail', render: (a) => text(a) },
          ]}
        />
      </Panel>
    </Page>
  );
}
