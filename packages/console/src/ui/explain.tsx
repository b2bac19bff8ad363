// The queue page's explain panel (GET /api/queues/{vhost}/{name}/dead-lettering, dlx-explain.ts in
// the node): for each reason what happens to a message right now, the DLX and DLK with where they
// came from, where copies go, and the warnings for broken topologies.
import { apiPath, HttpError } from './api.ts';
import { text } from './format.ts';
import { useApi } from './hooks.ts';
import { JsonView } from './json-view.tsx';
import { Badge, ErrorNote, Facts, Loading, Panel, Table } from './widgets.tsx';

interface Source {
  readonly from: 'argument' | 'policy' | 'smaller_of_both' | 'default';
  readonly policy: string | null;
}

interface Setting {
  readonly value: unknown;
  readonly source: Source;
}

interface Explanation {
  readonly dead_letter_exchange: Setting & { exists: boolean | null; type: string | null };
  readonly dead_letter_routing_key: Setting;
  readonly strategy: Setting & { effective: string; rabbitmq_needs_reject_publish: boolean };
  readonly overflow: Setting;
  readonly routing: {
    readonly uses: string;
    readonly depends_on_headers: boolean;
    readonly routes: readonly {
      keys: readonly string[] | null;
      key_source: string;
      via: { exchange: string; binding_key: string } | null;
      queues: readonly string[] | null;
    }[];
  };
  readonly reasons: readonly {
    reason: string;
    can_trigger: boolean;
    trigger: string;
    when: string;
    outcome: string;
    what_happens: string;
    cycles: readonly {
      path: readonly { queue: string; reason: string }[];
      closes_at: string;
      dropped: boolean;
    }[];
  }[];
  readonly warnings: readonly {
    code: string;
    severity: string;
    reasons: readonly string[];
    message: string;
  }[];
}

const SEVERITY_BADGE: Record<string, string> = { error: 'warn', warning: 'warn', info: 'info' };
const OUTCOME_BADGE: Record<string, string> = {
  dead_lettered: 'ok',
  held: 'warn',
  dropped: 'warn',
  not_applicable: 'default',
};

function sourceText(source: Source): string {
  if (source.from === 'policy') return `policy ${source.policy ?? ''}`;
  if (source.from === 'smaller_of_both') return `smaller of argument and policy ${source.policy ?? ''}`;
  return source.from;
}

function SettingValue(props: { setting: Setting; extra?: string }) {
  const { setting } = props;
  return (
    <span>
      {setting.value === null ? <span class="muted">none</span> : text(setting.value)}{' '}
      <Badge kind={setting.source.from === 'policy' ? 'policy' : setting.source.from}>
        {sourceText(setting.source)}
      </Badge>
      {props.extra === undefined ? null : ` ${props.extra}`}
    </span>
  );
}

function ExplanationView(props: { e: Explanation }) {
  const { e } = props;
  const dlx = e.dead_letter_exchange;
  const dlxState =
    dlx.value === null ? undefined : dlx.exists === false ? '(missing!)' : `(${dlx.type ?? '?'} exchange)`;
  return (
    <div data-testid="explain">
      {e.warnings.length === 0 ? (
        <p>
          <Badge kind="ok">no warnings</Badge>
        </p>
      ) : (
        <ul class="warnings">
          {e.warnings.map((w) => (
            <li key={`${w.code}\u0000${w.reasons.join(',')}`}>
              <Badge kind={SEVERITY_BADGE[w.severity] ?? 'warn'}>{w.severity}</Badge> {w.message}
            </li>
          ))}
        </ul>
      )}
      <Facts
        rows={[
          ['Dead-letter exchange', <SettingValue key="dlx" setting={dlx} extra={dlxState} />],
          ['Dead-letter routing key', <SettingValue key="dlk" setting={e.dead_letter_routing_key} />],
          [
            'Strategy',
            <SettingValue
              key="strategy"
              setting={e.strategy}
              extra={`runs: ${e.strategy.effective}${e.strategy.rabbitmq_needs_reject_publish ? ' (RabbitMQ would need overflow reject-publish)' : ''}`}
            />,
          ],
          ['Overflow', <SettingValue key="overflow" setting={e.overflow} />],
          [
            'Copies routed with',
            `${e.routing.uses.replaceAll('_', ' ')}${e.routing.depends_on_headers ? ' (and headers)' : ''}`,
          ],
        ]}
      />
      <h3>Per reason</h3>
      <Table
        testId="explain-reasons"
        rows={e.reasons}
        rowKey={(r) => r.reason}
        columns={[
          { key: 'reason', title: 'Reason', render: (r) => r.reason },
          {
            key: 'when',
            title: 'When',
            render: (r) => (r.can_trigger ? r.when : <span class="muted">{r.when}</span>),
          },
          {
            key: 'outcome',
            title: 'Outcome',
            render: (r) => (
              <Badge kind={OUTCOME_BADGE[r.outcome] ?? 'default'}>{r.outcome.replaceAll('_', ' ')}</Badge>
            ),
          },
          { key: 'what', title: 'What happens', render: (r) => r.what_happens },
          {
            key: 'cycles',
            title: 'Cycles',
            render: (r) =>
              r.cycles.length === 0
                ? '–'
                : r.cycles.map((c) => (
                    <div key={c.path.map((h) => h.queue).join('>')}>
                      {c.path.map((h) => `${h.queue} (${h.reason})`).join(' → ')} → {c.closes_at}{' '}
                      {c.dropped ? <Badge kind="warn">dropped</Badge> : null}
                    </div>
                  )),
          },
        ]}
      />
      <h3>Where copies go</h3>
      <Table
        rows={e.routing.routes}
        rowKey={(r) =>
          `${r.key_source}\u0000${(r.keys ?? []).join(',')}\u0000${r.via?.exchange ?? ''}\u0000${r.via?.binding_key ?? ''}`
        }
        empty="Nowhere."
        columns={[
          {
            key: 'keys',
            title: 'Keys',
            render: (r) =>
              r.keys === null ? <span class="muted">depends on the message</span> : r.keys.join(', '),
          },
          { key: 'source', title: 'Key from', render: (r) => r.key_source.replaceAll('_', ' ') },
          {
            key: 'via',
            title: 'Via binding',
            render: (r) => (r.via === null ? '–' : `${r.via.exchange || '(default)'} / ${r.via.binding_key}`),
          },
          {
            key: 'queues',
            title: 'Reaches',
            render: (r) =>
              r.queues === null ? (
                <span class="muted">unknown</span>
              ) : r.queues.length === 0 ? (
                <Badge kind="warn">no queue</Badge>
              ) : (
                r.queues.join(', ')
              ),
          },
        ]}
      />
      <details>
        <summary>Everything the node reports</summary>
        <JsonView value={e} />
      </details>
    </div>
  );
}

export function ExplainPanel(props: { vhost: string; name: string }) {
  const explained = useApi<Explanation>(apiPath('queues', props.vhost, props.name, 'dead-lettering'), 10_000);
  const missing =
    explained.error instanceof HttpError && explained.error.status === 404 && explained.data === undefined;
  return (
    <Panel title="Dead-lettering, explained" id="explain">
      {missing ? null : <ErrorNote error={explained.error} />}
      {explained.data === undefined ? (
        missing ? (
          <p class="muted">No explanation from this node.</p>
        ) : (
          <Loading />
        )
      ) : (
        <ExplanationView e={explained.data} />
      )}
    </Panel>
  );
}
