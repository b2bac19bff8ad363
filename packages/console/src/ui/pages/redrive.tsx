// Redrive: move messages of a dead-letter queue back to the queue each died in (its x-death) or to
// a named exchange and routing key, selected by the inspector's filter. A dry run first shows what
// would move and where; the real run shows its progress and can be cancelled. Past redrives of
// the queue (the cluster's audit record) are listed below.
import { useEffect, useState } from 'preact/hooks';
import { api, apiPath, withQuery } from '../api.ts';
import type { MessageFilterDraft } from '../filter.ts';
import { filterJson, filterQuery, recalledFilter, rememberFilter } from '../filter.ts';
import { FilterFields } from '../filter-form.tsx';
import { count, text, time } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { href } from '../route.ts';
import { ActionNote, Badge, ErrorNote, Page, Panel, SelectField, Table, TextField } from '../widgets.tsx';
import type { BrowsedMessage } from './inspector.tsx';

interface TargetCount {
  readonly exchange: string;
  readonly routing_key: string;
  readonly count: number;
}

interface Sample {
  readonly id: number;
  readonly exchange: string;
  readonly routing_key: string;
  readonly queues: readonly string[];
  readonly failure: string | null;
}

/** A redrive record as GET /api/redrives/{id} shows it. */
export interface RedriveInfo {
  readonly id: string;
  readonly user: string;
  readonly vhost: string;
  readonly queue: string;
  readonly dry_run: boolean;
  readonly state: string;
  readonly cancel_requested: boolean;
  readonly node: string;
  readonly created_at: number;
  readonly finished_at: number | null;
  readonly error: string | null;
  readonly target: { kind: string; exchange?: string; routing_key?: string };
  readonly total: number | null;
  readonly moved: number;
  readonly failed: number;
  readonly remaining: number | null;
  readonly would_move?: number;
  readonly would_fail?: number;
  readonly targets: readonly TargetCount[];
  readonly failures: readonly { reason: string; count: number }[];
  readonly sample: readonly Sample[];
}

/** Where the messages of the first page died, most first: the queues a redrive would return them to. */
function sourcesOf(messages: readonly BrowsedMessage[]): [string, number][] {
  const counts = new Map<string, number>();
  for (const m of messages) {
    const source = m.dead_lettering?.latest?.queue;
    if (source !== null && source !== undefined) counts.set(source, (counts.get(source) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]);
}

function Progress(props: { r: RedriveInfo; onCancel: () => void }) {
  const { r } = props;
  const running = r.state === 'running';
  const counts = r.dry_run
    ? `would move ${count(r.would_move ?? 0)}, would stay ${count(r.would_fail ?? r.failed)} of ${count(r.total)}`
    : `moved ${count(r.moved)}, left ${count(r.failed)} of ${r.total === null ? '…' : count(r.total)}`;
  return (
    <div class="redrive" data-testid={`redrive-${r.dry_run ? 'dry' : 'real'}`}>
      <p>
        <Badge kind={r.state === 'done' ? 'ok' : running ? 'info' : 'warn'}>{r.state}</Badge>{' '}
        {r.dry_run ? 'Dry run: ' : ''}
        <span data-testid="redrive-counts">{counts}</span> · on {r.node}
        {running && !r.dry_run ? (
          <>
            {' '}
            <progress max={Math.max(1, r.total ?? 0)} value={r.moved + r.failed} />{' '}
            <button type="button" class="danger" disabled={r.cancel_requested} onClick={props.onCancel}>
              Cancel
            </button>
          </>
        ) : null}
      </p>
      <ErrorNote error={r.error ?? undefined} />
      <Table
        rows={r.targets}
        rowKey={(t) => `${t.exchange}\u0000${t.routing_key}`}
        empty="Nothing to move."
        columns={[
          {
            key: 'exchange',
            title: 'To exchange',
            render: (t) => (t.exchange === '' ? '(default)' : t.exchange),
          },
          { key: 'key', title: 'Routing key', render: (t) => t.routing_key },
          { key: 'count', title: 'Messages', numeric: true, render: (t) => count(t.count) },
        ]}
      />
      {r.failures.length > 0 ? (
        <ul class="warnings">
          {r.failures.map((f) => (
            <li key={f.reason}>
              <Badge kind="warn">stays</Badge> {count(f.count)}: {f.reason}
            </li>
          ))}
        </ul>
      ) : null}
      {r.sample.length > 0 ? (
        <Table
          rows={r.sample}
          rowKey={(s) => String(s.id)}
          columns={[
            { key: 'id', title: 'Message', render: (s) => String(s.id) },
            {
              key: 'to',
              title: 'Published to',
              render: (s) => `${s.exchange === '' ? '(default)' : s.exchange} / ${s.routing_key}`,
            },
            { key: 'queues', title: 'Reaches', render: (s) => s.queues.join(', ') || '–' },
            { key: 'failure', title: 'Why it stays', render: (s) => text(s.failure) },
          ]}
        />
      ) : null}
    </div>
  );
}

export function RedrivePage(props: { vhost: string; name: string }) {
  const { vhost, name } = props;
  const [draft, setDraft] = useState<MessageFilterDraft>(() => recalledFilter(vhost, name));
  const [targetKind, setTargetKind] = useState('source');
  const [exchange, setExchange] = useState('');
  const [routingKey, setRoutingKey] = useState('');
  const [rate, setRate] = useState('');
  const [maxMessages, setMaxMessages] = useState('');
  const [current, setCurrent] = useState<string | undefined>(undefined);
  // A dry run is answered whole by the POST and kept nowhere else (not in the audit): shown from here.
  const [dryRun, setDryRun] = useState<RedriveInfo | undefined>(undefined);
  const action = useAction();
  const headQuery = new URLSearchParams([...filterQuery(draft), ['limit', '200'], ['body_bytes', '0']]);
  const head = useApi<{ messages: BrowsedMessage[] }>(
    `${apiPath('queues', vhost, name, 'messages')}?${headQuery}`,
  );
  const running = useApi<RedriveInfo>(current === undefined ? undefined : apiPath('redrives', current), 1000);
  const history = useApi<RedriveInfo[]>(withQuery(apiPath('redrives'), { vhost }), 5000);
  // The audit list follows the redrive on screen as it moves on and ends.
  const shownState = `${running.data?.id}:${running.data?.state}`;
  const reloadHistory = history.reload;
  useEffect(() => {
    if (shownState !== '') reloadHistory();
  }, [shownState, reloadHistory]);
  const sources = sourcesOf(head.data?.messages ?? []);
  const start = (dryRun: boolean): void => {
    rememberFilter(vhost, name, draft);
    const body = {
      filter: filterJson(draft),
      target: targetKind === 'source' ? 'source' : { exchange, routing_key: routingKey },
      rate: rate === '' ? null : Number(rate),
      max_messages: maxMessages === '' ? null : Number(maxMessages),
      dry_run: dryRun,
    };
    void action.run(
      async () => {
        const started = await api<RedriveInfo>('POST', apiPath('queues', vhost, name, 'redrive'), body);
        if (started.dry_run) {
          setDryRun(started);
          setCurrent(undefined);
          return;
        }
        setDryRun(undefined);
        setCurrent(started.id);
        history.reload();
      },
      dryRun ? 'Dry run done.' : 'Redrive started.',
    );
  };
  const mine = (history.data ?? []).filter((r) => r.vhost === vhost && r.queue === name);
  return (
    <Page
      title={`Redrive ${name}`}
      actions={
        <a class="button" href={href('inspect', vhost, name)}>
          Inspect messages
        </a>
      }
    >
      <Panel title="Which messages">
        <FilterFields draft={draft} onChange={setDraft} />
        <p data-testid="sources">
          {sources.length === 0
            ? 'None of the first messages records a queue it died in.'
            : `The first ${count(head.data?.messages.length ?? 0)} selected messages died in: ${sources.map(([q, n]) => `${q} (${n})`).join(', ')}.`}
        </p>
        <ErrorNote error={head.error} />
      </Panel>
      <Panel title="Where to">
        <div class="inline-form">
          <SelectField
            label="Target"
            name="redrive-target"
            value={targetKind}
            options={[
              ['source', 'back to the queue each died in (x-death)'],
              ['exchange', 'an exchange and routing key'],
            ]}
            onChange={setTargetKind}
          />
          {targetKind === 'exchange' ? (
            <>
              <TextField label="Exchange" name="redrive-exchange" value={exchange} onChange={setExchange} />
              <TextField label="Routing key" name="redrive-key" value={routingKey} onChange={setRoutingKey} />
            </>
          ) : null}
          <TextField label="Rate limit (msg/s)" name="redrive-rate" numeric value={rate} onChange={setRate} />
          <TextField
            label="At most (messages)"
            name="redrive-max"
            numeric
            value={maxMessages}
            onChange={setMaxMessages}
          />
        </div>
        <p>
          <button type="button" disabled={action.busy} onClick={() => start(true)}>
            Dry run
          </button>{' '}
          <button type="button" class="primary" disabled={action.busy} onClick={() => start(false)}>
            Redrive
          </button>
        </p>
        <ActionNote action={action} />
      </Panel>
      {dryRun === undefined ? null : (
        <Panel title="Dry run">
          <Progress r={dryRun} onCancel={() => undefined} />
        </Panel>
      )}
      {running.data === undefined || dryRun !== undefined ? null : (
        <Panel title={running.data.dry_run ? 'Dry run' : 'Progress'}>
          <Progress
            r={running.data}
            onCancel={() =>
              void action.run(
                () => api('DELETE', apiPath('redrives', running.data?.id ?? '')),
                'Cancel asked.',
              )
            }
          />
        </Panel>
      )}
      <ErrorNote error={running.error} />
      <Panel title="Redrives of this queue (audit)">
        <ErrorNote error={history.error} />
        <Table
          rows={mine}
          rowKey={(r) => r.id}
          empty="None yet."
          columns={[
            { key: 'when', title: 'Started', render: (r) => time(r.created_at) },
            { key: 'who', title: 'By', render: (r) => r.user },
            { key: 'kind', title: 'Kind', render: (r) => (r.dry_run ? 'dry run' : 'redrive') },
            { key: 'state', title: 'State', render: (r) => r.state },
            {
              key: 'moved',
              title: 'Moved (dry run: would move)',
              numeric: true,
              render: (r) => count(r.dry_run ? (r.would_move ?? 0) : r.moved),
            },
            {
              key: 'failed',
              title: 'Left',
              numeric: true,
              render: (r) => count(r.dry_run ? (r.would_fail ?? r.failed) : r.failed),
            },
            {
              key: 'open',
              title: '',
              render: (r) => (
                <button
                  type="button"
                  class="linkish"
                  onClick={() => {
                    setDryRun(undefined);
                    setCurrent(r.id);
                  }}
                >
                  Show
                </button>
              ),
            },
          ]}
        />
      </Panel>
    </Page>
  );
}
