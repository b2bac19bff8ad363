// Queues: one server-side page at a time (GET /api/queues?page=…: thousands of queues stay fast),
// filtered by name (text or regular expression) and vhost, sorted by any column the API sorts by.
// Each row shows its configuration badges (and the policy that set them), replicas, pending
// at-least-once hand-offs and dead-lettered counts by reason.
import { useEffect, useState } from 'preact/hooks';
import { api, apiPath, withQuery } from '../api.ts';
import { useCaps } from '../caps.ts';
import { count } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { QueueInfo, QueuePage, VhostInfo } from '../model.ts';
import { QueueBadges, ReasonCounts } from '../queue-badges.tsx';
import { href } from '../route.ts';
import type { SortState } from '../widgets.tsx';
import {
  Badge,
  CheckField,
  ErrorNote,
  FormPanel,
  Page,
  Pager,
  SelectField,
  Table,
  TextField,
} from '../widgets.tsx';

const PAGE_SIZES = ['20', '50', '100', '500'];

/** The text typed, once typing paused for `ms`. */
function useDebounced(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

function Replicas(props: { q: QueueInfo }) {
  const { q } = props;
  if (q.members === undefined) return <span>{q.node}</span>;
  const online = q.online?.length ?? 0;
  return (
    <span>
      {q.leader ?? <Badge kind="warn">no leader</Badge>}{' '}
      <span class={online < q.members.length ? 'warn-text' : 'muted'}>
        ({online}/{q.members.length} online)
      </span>
      {q.under_replicated === true ? (
        <>
          {' '}
          <Badge kind="warn" title="a member is offline, or the queue has fewer members than it should">
            under-replicated
          </Badge>
        </>
      ) : null}
    </span>
  );
}

/** At-least-once hand-offs waiting, and how many of them are blocked (nowhere to go now). */
function PendingHandOffs(props: { q: QueueInfo }) {
  const { q } = props;
  if (q.messages_dead_letter_pending === 0) return <span>0</span>;
  const blocked = q.messages_dead_letter_blocked ?? 0;
  return (
    <Badge kind="warn" title="dead-lettered at-least-once, waiting for every target to confirm">
      {count(q.messages_dead_letter_pending)}
      {blocked > 0 ? ` (${count(blocked)} blocked)` : ''}
    </Badge>
  );
}

function NewQueue(props: { vhosts: readonly string[]; onMade: () => void }) {
  const [vhost, setVhost] = useState(props.vhosts[0] ?? '/');
  const [name, setName] = useState('');
  const [durable, setDurable] = useState(true);
  const [args, setArgs] = useState('{}');
  return (
    <FormPanel
      title="Add a queue"
      submit="Add queue"
      action={useAction()}
      work={() =>
        api('PUT', apiPath('queues', vhost, name), {
          durable,
          auto_delete: false,
          arguments: JSON.parse(args),
        })
      }
      doneText={`Queue '${name}' declared.`}
      onDone={props.onMade}
      disabled={name === ''}
    >
      <SelectField
        label="Vhost"
        name="queue-vhost"
        value={vhost}
        options={props.vhosts}
        onChange={setVhost}
      />
      <TextField label="Name" name="queue-name" value={name} onChange={setName} required />
      <CheckField label="Durable" name="queue-durable" checked={durable} onChange={setDurable} />
      <TextField label="Arguments (JSON)" name="queue-arguments" value={args} onChange={setArgs} />
    </FormPanel>
  );
}

export function QueuesPage() {
  const caps = useCaps();
  const [vhost, setVhost] = useState('');
  const [filter, setFilter] = useState('');
  const [regex, setRegex] = useState(false);
  const [sort, setSort] = useState<SortState>({ key: undefined, reverse: false });
  const [page, setPage] = useState(1);
  const [pageSize, setPageSize] = useState(100);
  const name = useDebounced(filter, 300);
  const vhosts = useApi<VhostInfo[]>(apiPath('vhosts'));
  // A new filter or sort starts again at page 1.
  useEffect(() => setPage(1), [vhost, name, regex, sort, pageSize]);
  const base = vhost === '' ? apiPath('queues') : apiPath('queues', vhost);
  const path = withQuery(base, {
    page,
    page_size: pageSize,
    name,
    use_regex: regex ? 'true' : undefined,
    sort: sort.key,
    sort_reverse: sort.key === undefined ? undefined : String(sort.reverse),
  });
  const listed = useApi<QueuePage>(path, 5000);
  const data = listed.data;
  const onSort = (key: string): void =>
    setSort((s) => ({ key, reverse: s.key === key ? !s.reverse : key !== 'name' && key !== 'vhost' }));
  const sortable = (key: string) => () => key;
  return (
    <Page title="Queues">
      <div class="toolbar">
        <SelectField
          label="Vhost"
          name="queues-vhost"
          value={vhost}
          options={[['', 'all'], ...(vhosts.data ?? []).map((v) => v.name)]}
          onChange={setVhost}
        />
        <TextField label="Filter by name" name="filter" value={filter} onChange={setFilter} />
        <CheckField label="Regex" name="filter-regex" checked={regex} onChange={setRegex} />
        <SelectField
          label="Per page"
          name="page-size"
          value={String(pageSize)}
          options={PAGE_SIZES}
          onChange={(v) => setPageSize(Number(v))}
        />
      </div>
      <ErrorNote error={listed.error} />
      {data === undefined ? null : (
        <>
          <Pager
            page={data.page}
            pageCount={data.page_count}
            onPage={setPage}
            summary={`${count(data.filtered_count)} of ${count(data.total_count)} queues`}
          />
          <Table
            testId="queues"
            rows={data.items}
            rowKey={(q) => `${q.vhost}\u0000${q.name}`}
            sort={sort}
            onSort={onSort}
            columns={[
              {
                key: 'name',
                title: 'Name',
                sortValue: sortable('name'),
                render: (q) => (
                  <a href={href('queue', q.vhost, q.name)} data-queue={q.name}>
                    {q.name}
                  </a>
                ),
              },
              { key: 'vhost', title: 'Vhost', sortValue: sortable('vhost'), render: (q) => q.vhost },
              {
                key: 'state',
                title: 'State',
                sortValue: sortable('state'),
                render: (q) => (q.state === 'running' ? q.state : <Badge kind="warn">{q.state}</Badge>),
              },
              { key: 'leader', title: 'Leader (replicas)', render: (q) => <Replicas q={q} /> },
              { key: 'features', title: 'Configuration', render: (q) => <QueueBadges queue={q} /> },
              {
                key: 'policy',
                title: 'Policy',
                sortValue: sortable('policy'),
                render: (q) => q.policy ?? '–',
              },
              {
                key: 'messages_ready',
                title: 'Ready',
                numeric: true,
                sortValue: sortable('messages_ready'),
                render: (q) => count(q.messages_ready),
              },
              {
                key: 'messages_unacknowledged',
                title: 'Unacked',
                numeric: true,
                sortValue: sortable('messages_unacknowledged'),
                render: (q) => count(q.messages_unacknowledged),
              },
              {
                key: 'messages_dead_letter_pending',
                title: 'Pending hand-offs',
                numeric: true,
                sortValue: sortable('messages_dead_letter_pending'),
                render: (q) => <PendingHandOffs q={q} />,
              },
              {
                key: 'dead_lettered',
                title: 'Dead-lettered',
                sortValue: sortable('dead_lettered'),
                render: (q) => <ReasonCounts totals={q.dead_lettered} />,
              },
              {
                key: 'consumers',
                title: 'Consumers',
                numeric: true,
                sortValue: sortable('consumers'),
                render: (q) => count(q.consumers),
              },
            ]}
          />
        </>
      )}
      {caps.topology ? (
        <NewQueue
          vhosts={(vhosts.data ?? []).map((v) => v.name)}
          onMade={() => {
            listed.reload();
          }}
        />
      ) : null}
      <p class="muted">The list refreshes every 5 s.</p>
    </Page>
  );
}
