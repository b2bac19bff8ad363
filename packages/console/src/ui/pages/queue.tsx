// One queue: its counts charted from samples taken in the page, its effective configuration with
// each setting's source (argument vs policy), its replicas, bindings, the dead-lettering
// explanation, and the way to its messages (inspector) and to a redrive.
import { api, apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { LineChart, rates, useSamples } from '../chart.tsx';
import { configSettings } from '../config-sources.ts';
import { ExplainPanel } from '../explain.tsx';
import { bytes, count, text } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { JsonView } from '../json-view.tsx';
import type { BindingInfo, QueueInfo } from '../model.ts';
import { REASONS, reasonTotal } from '../model.ts';
import { QueueBadges, ReasonCounts } from '../queue-badges.tsx';
import { href, navigate } from '../route.ts';
import {
  ActionNote,
  Badge,
  DangerButton,
  ErrorNote,
  Facts,
  Loading,
  Page,
  Panel,
  Table,
} from '../widgets.tsx';

interface QuorumStatus {
  readonly leader: string;
  readonly term: number | null;
  readonly commit_index: number;
  readonly members: readonly { node: string; role: string; match_index: number; online: boolean }[];
}

function ConfigPanel(props: { q: QueueInfo }) {
  const { q } = props;
  return (
    <Panel title="Effective configuration">
      <p>
        Policy:{' '}
        {q.policy === null ? (
          <span class="muted">none applies</span>
        ) : (
          <Badge kind="policy">{q.policy}</Badge>
        )}
      </p>
      <Table
        testId="effective-config"
        rows={configSettings(q)}
        rowKey={(s) => s.label}
        columns={[
          { key: 'setting', title: 'Setting', render: (s) => s.title },
          { key: 'value', title: 'In force', render: (s) => text(s.value) },
          {
            key: 'source',
            title: 'From',
            render: (s) => (
              <Badge kind={s.source}>{s.source === 'policy' ? `policy ${q.policy ?? ''}` : s.source}</Badge>
            ),
          },
          { key: 'argument', title: 'Queue argument', render: (s) => text(s.argument) },
          { key: 'policy', title: 'Policy value', render: (s) => text(s.policyValue) },
        ]}
      />
    </Panel>
  );
}

function Charts(props: { q: QueueInfo | undefined }) {
  const samples = useSamples(props.q);
  const stats = (v: QueueInfo, key: string): number => {
    const value = v.message_stats?.[key];
    return typeof value === 'number' ? value : 0;
  };
  const hasStats = samples.some((s) => s.value.message_stats !== undefined);
  return (
    <div class="cards">
      <LineChart
        title="Depth (sampled every 2 s)"
        series={[
          { name: 'ready', values: samples.map((s) => s.value.messages_ready) },
          { name: 'unacked', values: samples.map((s) => s.value.messages_unacknowledged) },
          { name: 'pending hand-off', values: samples.map((s) => s.value.messages_dead_letter_pending) },
        ]}
      />
      <LineChart
        title="Dead-lettered per second, by reason"
        unit="/s"
        series={REASONS.map((r) => ({ name: r, values: rates(samples, (v) => v.dead_lettered[r]) }))}
      />
      {hasStats ? (
        <LineChart
          title="Message rates"
          unit="/s"
          series={['publish', 'deliver_get', 'ack'].map((key) => ({
            name: key,
            values: rates(samples, (v) => stats(v, key)),
          }))}
        />
      ) : null}
    </div>
  );
}

function ReplicasPanel(props: { q: QueueInfo }) {
  const caps = useCaps();
  const { q } = props;
  const status = useApi<QuorumStatus>(
    caps.admin && q.members !== undefined ? apiPath('queues', q.vhost, q.name, 'quorum_status') : undefined,
    5000,
  );
  if (q.members === undefined) return null;
  const s = status.data;
  return (
    <Panel title="Replicas">
      <p>
        Leader: <strong>{q.leader ?? 'none known'}</strong>
        {s === undefined ? null : ` · term ${s.term ?? '–'} · commit index ${count(s.commit_index)}`}
      </p>
      {s === undefined ? (
        <p>
          Members: {q.members.join(', ')} · online: {(q.online ?? []).join(', ') || 'none'}
        </p>
      ) : (
        <Table
          rows={s.members}
          rowKey={(m) => m.node}
          columns={[
            { key: 'node', title: 'Node', render: (m) => m.node },
            { key: 'role', title: 'Role', render: (m) => m.role },
            {
              key: 'online',
              title: 'State',
              render: (m) => (m.online ? 'online' : <Badge kind="warn">offline</Badge>),
            },
            { key: 'match', title: 'On disk up to', numeric: true, render: (m) => count(m.match_index) },
            {
              key: 'lag',
              title: 'Behind commit',
              numeric: true,
              render: (m) => count(Math.max(0, s.commit_index - m.match_index)),
            },
          ]}
        />
      )}
      <ErrorNote error={status.error} />
    </Panel>
  );
}

export function QueuePage(props: { vhost: string; name: string }) {
  const caps = useCaps();
  const { vhost, name } = props;
  const queue = useApi<QueueInfo>(apiPath('queues', vhost, name), 2000);
  const bindings = useApi<BindingInfo[]>(apiPath('queues', vhost, name, 'bindings'), 10_000);
  const action = useAction();
  const q = queue.data;
  if (q === undefined) {
    return (
      <Page title={`Queue ${name}`}>
        {queue.error === undefined ? <Loading /> : <ErrorNote error={queue.error} />}
      </Page>
    );
  }
  const dropped = q.dead_letter_dropped;
  return (
    <Page
      title={`Queue ${q.name}`}
      actions={
        <>
          <a class="button" href={href('inspect', vhost, name)}>
            Inspect messages
          </a>
          {caps.topology ? (
            <>
              <a class="button" href={href('redrive', vhost, name)}>
                Redrive…
              </a>
              <DangerButton
                label="Purge"
                confirm={`Delete every ready message of '${q.name}'?`}
                disabled={action.busy}
                onConfirm={() =>
                  void action
                    .run(() => api('DELETE', apiPath('queues', vhost, name, 'contents')), 'Purged.')
                    .then(queue.reload)
                }
              />
              <DangerButton
                label="Delete queue"
                confirm={`Delete the queue '${q.name}' and its messages?`}
                disabled={action.busy}
                onConfirm={() =>
                  void action
                    .run(() => api('DELETE', apiPath('queues', vhost, name)), 'Deleted.')
                    .then((ok) => ok && navigate('queues'))
                }
              />
            </>
          ) : null}
        </>
      }
    >
      <ErrorNote error={queue.error} />
      <ActionNote action={action} />
      <p>
        Vhost <strong>{q.vhost}</strong> · {q.durable ? 'durable' : 'transient'} · {q.state} ·{' '}
        <QueueBadges queue={q} />
      </p>
      <div class="cards">
        <Facts
          rows={[
            ['Ready', count(q.messages_ready)],
            ['Unacked', count(q.messages_unacknowledged)],
            ['Ready bytes', bytes(q.message_bytes_ready)],
            ['Pending hand-offs', count(q.messages_dead_letter_pending)],
            ['Blocked hand-offs', count(q.messages_dead_letter_blocked ?? 0)],
            ['Consumers', count(q.consumers)],
            ['Dead-lettered', <ReasonCounts key="dl" totals={q.dead_lettered} />],
            ['Dropped (no DLX)', count(reasonTotal(dropped.no_dlx))],
            ['Dropped (cycle)', count(reasonTotal(dropped.cycle))],
            ['Lost (at-most-once)', count(reasonTotal(dropped.at_most_once))],
          ]}
        />
        <Charts q={q} />
      </div>
      <ConfigPanel q={q} />
      <ExplainPanel vhost={vhost} name={name} />
      <ReplicasPanel q={q} />
      <Panel title="Bindings">
        <ErrorNote error={bindings.error} />
        <Table
          rows={bindings.data ?? []}
          rowKey={(b) => `${b.source}\u0000${b.routing_key}\u0000${JSON.stringify(b.arguments)}`}
          columns={[
            {
              key: 'source',
              title: 'From exchange',
              render: (b) => (b.source === '' ? '(default)' : b.source),
            },
            { key: 'key', title: 'Routing key', render: (b) => b.routing_key },
            { key: 'args', title: 'Arguments', render: (b) => text(b.arguments) },
          ]}
        />
      </Panel>
      <Panel title="Declared arguments">
        <JsonView value={q.arguments} />
      </Panel>
    </Page>
  );
}
