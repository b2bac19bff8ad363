// Policies: list, add, edit, delete (administrators and policymakers). The form can start from the
// dead-lettering guide's example, `rabbitmqctl set_policy DLX ".*" '{"dead-letter-exchange":"my-dlx"}'
// --apply-to queues`.
import { useState } from 'preact/hooks';
import { api, apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { text } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { PolicyInfo, VhostInfo } from '../model.ts';
import {
  ActionNote,
  DangerButton,
  ErrorNote,
  FormPanel,
  Page,
  SelectField,
  Table,
  TextAreaField,
  TextField,
} from '../widgets.tsx';

interface Draft {
  vhost: string;
  name: string;
  pattern: string;
  applyTo: string;
  priority: string;
  definition: string;
}

const EMPTY: Draft = { vhost: '/', name: '', pattern: '', applyTo: 'all', priority: '0', definition: '{}' };

/** The guide's DLX policy. */
const GUIDE_DLX: Omit<Draft, 'vhost'> = {
  name: 'DLX',
  pattern: '.*',
  applyTo: 'queues',
  priority: '0',
  definition: '{\n  "dead-letter-exchange": "my-dlx"\n}',
};

function policyBody(draft: Draft): unknown {
  let definition: unknown;
  try {
    definition = JSON.parse(draft.definition);
  } catch (err) {
    throw new Error(`the definition is not JSON: ${(err as Error).message}`);
  }
  return { pattern: draft.pattern, 'apply-to': draft.applyTo, priority: Number(draft.priority), definition };
}

function PolicyForm(props: {
  draft: Draft;
  vhosts: readonly string[];
  onSaved: () => void;
  onChange: (d: Draft) => void;
}) {
  const { draft, onChange } = props;
  const set = (key: keyof Draft) => (value: string) => onChange({ ...draft, [key]: value });
  return (
    <FormPanel
      id="policy-form"
      title="Add or update a policy"
      submit="Save policy"
      action={useAction()}
      work={async () => api('PUT', apiPath('policies', draft.vhost, draft.name), policyBody(draft))}
      doneText={`Policy '${draft.name}' saved.`}
      onDone={props.onSaved}
    >
      <SelectField
        label="Vhost"
        name="policy-vhost"
        value={draft.vhost}
        options={props.vhosts}
        onChange={set('vhost')}
      />
      <TextField label="Name" name="policy-name" value={draft.name} onChange={set('name')} required />
      <TextField
        label="Pattern (regex on names)"
        name="policy-pattern"
        value={draft.pattern}
        onChange={set('pattern')}
        required
      />
      <SelectField
        label="Apply to"
        name="policy-apply-to"
        value={draft.applyTo}
        options={[
          ['all', 'exchanges and queues'],
          ['queues', 'queues'],
          ['exchanges', 'exchanges'],
        ]}
        onChange={set('applyTo')}
      />
      <TextField
        label="Priority"
        name="policy-priority"
        numeric
        value={draft.priority}
        onChange={set('priority')}
      />
      <TextAreaField
        label="Definition (JSON)"
        name="policy-definition"
        rows={6}
        value={draft.definition}
        onChange={set('definition')}
        hint="dead-letter-exchange, dead-letter-routing-key, dead-letter-strategy, message-ttl, expires, max-length, max-length-bytes, overflow, delivery-limit"
      />
      <button type="button" onClick={() => onChange({ ...GUIDE_DLX, vhost: draft.vhost })}>
        Start from the guide's DLX policy
      </button>
      <button type="button" onClick={() => onChange({ ...EMPTY, vhost: draft.vhost })}>
        Clear
      </button>
    </FormPanel>
  );
}

export function PoliciesPage() {
  const caps = useCaps();
  const policies = useApi<PolicyInfo[]>(apiPath('policies'), 10_000);
  const vhosts = useApi<VhostInfo[]>(apiPath('vhosts'));
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const action = useAction();
  const vhostNames = (vhosts.data ?? []).map((v) => v.name);
  return (
    <Page title="Policies">
      <ErrorNote error={policies.error} />
      <ActionNote action={action} />
      <Table
        testId="policies"
        rows={policies.data ?? []}
        rowKey={(p) => `${p.vhost}\u0000${p.name}`}
        empty="No policies."
        columns={[
          { key: 'vhost', title: 'Vhost', sortValue: (p) => p.vhost, render: (p) => p.vhost },
          { key: 'name', title: 'Name', sortValue: (p) => p.name, render: (p) => p.name },
          { key: 'pattern', title: 'Pattern', render: (p) => p.pattern },
          { key: 'apply', title: 'Apply to', render: (p) => p['apply-to'] },
          {
            key: 'priority',
            title: 'Priority',
            numeric: true,
            sortValue: (p) => p.priority,
            render: (p) => String(p.priority),
          },
          { key: 'definition', title: 'Definition', render: (p) => text(p.definition) },
          ...(caps.policies
            ? [
                {
                  key: 'actions',
                  title: '',
                  render: (p: PolicyInfo) => (
                    <span class="row-actions">
                      <button
                        type="button"
                        onClick={() => {
                          setDraft({
                            vhost: p.vhost,
                            name: p.name,
                            pattern: p.pattern,
                            applyTo: p['apply-to'],
                            priority: String(p.priority),
                            definition: JSON.stringify(p.definition, null, 2),
                          });
                          document.getElementById('policy-form')?.scrollIntoView();
                        }}
                      >
                        Edit
                      </button>
                      <DangerButton
                        label="Delete"
                        confirm={`Delete the policy '${p.name}' of vhost '${p.vhost}'?`}
                        onConfirm={() =>
                          void action
                            .run(
                              () => api('DELETE', apiPath('policies', p.vhost, p.name)),
                              `Policy '${p.name}' deleted.`,
                            )
                            .then(policies.reload)
                        }
                      />
                    </span>
                  ),
                },
              ]
            : []),
        ]}
      />
      {caps.policies ? (
        <PolicyForm draft={draft} vhosts={vhostNames} onChange={setDraft} onSaved={policies.reload} />
      ) : null}
    </Page>
  );
}
