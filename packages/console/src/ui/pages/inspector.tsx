// The dead-letter inspector: a queue's ready messages from the head, read without taking them
// (GET /api/queues/{vhost}/{name}/messages), filtered by reason, source queue, age and headers;
// each message's properties, headers, body preview (text, JSON or hex) and x-death as a table.
// Everything here was written by publishers: it is shown as text, never as markup.
import { useState } from 'preact/hooks';
import { apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import type { MessageFilterDraft } from '../filter.ts';
import { filterQuery, recalledFilter, rememberFilter } from '../filter.ts';
import { FilterFields } from '../filter-form.tsx';
import { bytes, count, duration, text, time } from '../format.ts';
import { useApi } from '../hooks.ts';
import { JsonView } from '../json-view.tsx';
import type { JsonObject } from '../model.ts';
import { href } from '../route.ts';
import { Badge, ErrorNote, Facts, Loading, Page, Panel, SelectField, Table } from '../widgets.tsx';

interface DeathEntry {
  readonly reason: string | null;
  readonly queue: string | null;
  readonly exchange: string | null;
  readonly routing_keys: readonly string[] | null;
  readonly count: number | null;
  readonly time: number | null;
  readonly original_expiration: string | null;
}

interface DeathSummary {
  readonly reason: string | null;
  readonly queue: string | null;
  readonly exchange: string | null;
}

export interface BrowsedMessage {
  readonly id: number;
  readonly enqueued_at: number;
  readonly age_ms: number;
  readonly delivery_count: number;
  readonly redelivered: boolean;
  readonly expires_at: number | null;
  readonly size: number;
  readonly body_available: boolean;
  readonly exchange: string | null;
  readonly routing_key: string | null;
  readonly properties: JsonObject | null;
  readonly headers: JsonObject | null;
  readonly body: {
    size: number;
    encoding: 'json' | 'text' | 'hex';
    preview: string;
    truncated: boolean;
  } | null;
  readonly dead_lettering: {
    readonly x_death: readonly DeathEntry[];
    readonly first_death: DeathSummary | null;
    readonly last_death: DeathSummary | null;
    readonly latest: DeathSummary | null;
  } | null;
}

interface BrowsePage {
  readonly leader: string;
  readonly read_at: number;
  readonly ready: number;
  readonly scanned: number;
  readonly next: number | null;
  readonly messages: readonly BrowsedMessage[];
}

const LIMITS = ['20', '50', '100', '200'];

/** `x-death` decoded; each queue links to its page (dead-lettering stays in one vhost). */
export function XDeathTable(props: { entries: readonly DeathEntry[]; vhost: string }) {
  return (
    <Table
      testId="x-death"
      rows={props.entries}
      rowKey={(d) => `${d.queue}\u0000${d.reason}`}
      empty="Never dead-lettered."
      columns={[
        { key: 'reason', title: 'Reason', render: (d) => <Badge kind="warn">{d.reason ?? '?'}</Badge> },
        {
          key: 'queue',
          title: 'Queue',
          render: (d) =>
            d.queue === null ? '–' : <a href={href('queue', props.vhost, d.queue)}>{d.queue}</a>,
        },
        {
          key: 'exchange',
          title: 'Exchange',
          render: (d) => (d.exchange === '' ? '(default)' : text(d.exchange)),
        },
        { key: 'keys', title: 'Routing keys', render: (d) => (d.routing_keys ?? []).join(', ') },
        { key: 'count', title: 'Count', numeric: true, render: (d) => count(d.count) },
        { key: 'time', title: 'Time', render: (d) => time(d.time) },
        { key: 'expiration', title: 'Original expiration', render: (d) => text(d.original_expiration) },
      ]}
    />
  );
}

function BodyPreview(props: { body: NonNullable<BrowsedMessage['body']> }) {
  const { body } = props;
  let shown = body.preview;
  if (body.encoding === 'json' && !body.truncated) {
    try {
      shown = JSON.stringify(JSON.parse(body.preview), null, 2);
    } catch {
      // Cut or not quite JSON: as it came.
    }
  }
  if (body.encoding === 'hex')
    shown = (body.preview.match(/.{1,32}/g) ?? []).map((l) => l.replace(/(..)/g, '$1 ')).join('\n');
  return (
    <div>
      <p class="muted">
        {body.encoding} · {bytes(body.size)}
        {body.truncated ? ' · preview cut' : ''}
      </p>
      <pre class="body" data-testid="body">
        {shown}
      </pre>
    </div>
  );
}

function MessageDetail(props: { m: BrowsedMessage; vhost: string }) {
  const { m } = props;
  return (
    <div class="message-detail" data-testid={`message-${m.id}`}>
      <div class="cards">
        <Facts
          rows={[
            ['Id', String(m.id)],
            ['Exchange', m.exchange === '' ? '(default)' : text(m.exchange)],
            ['Routing key', text(m.routing_key)],
            ['Enqueued', time(m.enqueued_at)],
            ['Delivery count', count(m.delivery_count)],
            ['Expires', m.expires_at === null ? 'never' : time(m.expires_at)],
          ]}
        />
        <div>
          <h3>Properties</h3>
          <JsonView value={m.properties} />
        </div>
      </div>
      <h3>x-death</h3>
      <XDeathTable entries={m.dead_lettering?.x_death ?? []} vhost={props.vhost} />
      <h3>Headers</h3>
      <JsonView value={m.headers} />
      <h3>Body</h3>
      {m.body === null ? (
        <p class="muted">The body is being repaired on the leader.</p>
      ) : (
        <BodyPreview body={m.body} />
      )}
    </div>
  );
}

export function InspectorPage(props: { vhost: string; name: string }) {
  const caps = useCaps();
  const { vhost, name } = props;
  const [draft, setDraft] = useState<MessageFilterDraft>(() => recalledFilter(vhost, name));
  const [applied, setApplied] = useState<MessageFilterDraft>(draft);
  const [after, setAfter] = useState<number[]>([]);
  const [limit, setLimit] = useState(50);
  const [open, setOpen] = useState<number | undefined>(undefined);
  const query = new URLSearchParams([...filterQuery(applied), ['limit', String(limit)]]);
  const cursor = after[after.length - 1];
  if (cursor !== undefined) query.set('after', String(cursor));
  const page = useApi<BrowsePage>(
    `${apiPath('queues', vhost, name, 'messages')}?${query.toString()}`,
    10_000,
  );
  const p = page.data;
  return (
    <Page
      title={`Messages of ${name}`}
      actions={
        <>
          <a class="button" href={href('queue', vhost, name)}>
            Back to the queue
          </a>
          {caps.topology ? (
            <a
              class="button"
              href={href('redrive', vhost, name)}
              onClick={() => rememberFilter(vhost, name, applied)}
            >
              Redrive these…
            </a>
          ) : null}
        </>
      }
    >
      <form
        onSubmit={(event) => {
          event.preventDefault();
          rememberFilter(vhost, name, draft);
          setApplied(draft);
          setAfter([]);
        }}
      >
        <FilterFields draft={draft} onChange={setDraft} />
        <div class="inline-form">
          <SelectField
            label="Per page"
            name="inspector-limit"
            value={String(limit)}
            options={LIMITS}
            onChange={(v) => setLimit(Number(v))}
          />
          <button type="submit">Apply filter</button>
        </div>
      </form>
      <ErrorNote error={page.error} />
      {p === undefined ? (
        page.error === undefined ? (
          <Loading />
        ) : null
      ) : (
        <>
          <p class="muted">
            {count(p.ready)} ready in the queue · read on {p.leader} at {time(p.read_at)} · {count(p.scanned)}{' '}
            looked at
          </p>
          <div class="pager">
            <button type="button" disabled={after.length === 0} onClick={() => setAfter([])}>
              ⇤ Head
            </button>
            <button type="button" disabled={after.length === 0} onClick={() => setAfter(after.slice(0, -1))}>
              ‹ Previous
            </button>
            <button
              type="button"
              disabled={p.next === null}
              onClick={() => p.next !== null && setAfter([...after, p.next])}
            >
              Next ›
            </button>
          </div>
          <Table
            testId="messages"
            rows={p.messages}
            rowKey={(m) => String(m.id)}
            empty="No message matches."
            columns={[
              {
                key: 'id',
                title: 'Id',
                render: (m) => (
                  <button
                    type="button"
                    class="linkish"
                    onClick={() => setOpen(open === m.id ? undefined : m.id)}
                  >
                    {String(m.id)}
                  </button>
                ),
              },
              { key: 'age', title: 'Age', render: (m) => duration(m.age_ms) },
              { key: 'reason', title: 'Reason', render: (m) => text(m.dead_lettering?.latest?.reason) },
              { key: 'source', title: 'Died in', render: (m) => text(m.dead_lettering?.latest?.queue) },
              { key: 'key', title: 'Routing key', render: (m) => text(m.routing_key) },
              {
                key: 'deliveries',
                title: 'Deliveries',
                numeric: true,
                render: (m) => count(m.delivery_count),
              },
              { key: 'size', title: 'Size', numeric: true, render: (m) => bytes(m.size) },
              {
                key: 'preview',
                title: 'Body',
                render: (m) => (
                  <span class="preview">{m.body === null ? '–' : m.body.preview.slice(0, 80)}</span>
                ),
              },
            ]}
          />
          {p.messages
            .filter((m) => m.id === open)
            .map((m) => (
              <Panel key={m.id} title={`Message ${m.id}`}>
                <MessageDetail m={m} vhost={vhost} />
              </Panel>
            ))}
        </>
      )}
    </Page>
  );
}
