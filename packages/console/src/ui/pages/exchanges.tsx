// Exchanges and bindings: every exchange (type, flags, policy), every binding; users who may
// change the topology add and delete them here.
import { useState } from 'preact/hooks';
import { api, apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { text } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { BindingInfo, ExchangeInfo, VhostInfo } from '../model.ts';
import { href } from '../route.ts';
import {
  ActionNote,
  DangerButton,
  ErrorNote,
  FormPanel,
  Page,
  Panel,
  SelectField,
  Table,
  TextField,
} from '../widgets.tsx';

const TYPES = ['direct', 'fanout', 'topic', 'headers'];

/** The path segment of an exchange ('' is the default exchange, 'amq.default' in a path). */
function exchangeSegment(name: string): string {
  return name === '' ? 'amq.default' : name;
}

function NewExchange(props: { vhosts: readonly string[]; onMade: () => void }) {
  const [vhost, setVhost] = useState(props.vhosts[0] ?? '/');
  const [name, setName] = useState('');
  const [type, setType] = useState('direct');
  return (
    <FormPanel
      title="Add an exchange"
      submit="Add exchange"
      action={useAction()}
      work={() => api('PUT', apiPath('exchanges', vhost, name), { type, durable: true })}
      doneText={`Exchange '${name}' declared.`}
      onDone={props.onMade}
      disabled={name === ''}
    >
      <SelectField
        label="Vhost"
        name="exchange-vhost"
        value={vhost}
        options={props.vhosts}
        onChange={setVhost}
      />
      <TextField label="Name" name="exchange-name" value={name} onChange={setName} required />
      <SelectField label="Type" name="exchange-type" value={type} options={TYPES} onChange={setType} />
    </FormPanel>
  );
}

function NewBinding(props: { vhosts: readonly string[]; onMade: () => void }) {
  const [vhost, setVhost] = useState(props.vhosts[0] ?? '/');
  const [source, setSource] = useState('');
  const [kind, setKind] = useState('q');
  const [destination, setDestination] = useState('');
  const [key, setKey] = useState('');
  return (
    <FormPanel
      title="Add a binding"
      submit="Bind"
      action={useAction()}
      work={() =>
        api('POST', apiPath('bindings', vhost, 'e', source, kind, destination), { routing_key: key })
      }
      doneText="Bound."
      onDone={props.onMade}
      disabled={source === '' || destination === ''}
    >
      <SelectField
        label="Vhost"
        name="binding-vhost"
        value={vhost}
        options={props.vhosts}
        onChange={setVhost}
      />
      <TextField label="From exchange" name="binding-source" value={source} onChange={setSource} required />
      <SelectField
        label="To"
        name="binding-kind"
        value={kind}
        options={[
          ['q', 'queue'],
          ['e', 'exchange'],
        ]}
        onChange={setKind}
      />
      <TextField
        label="Destination"
        name="binding-destination"
        value={destination}
        onChange={setDestination}
        required
      />
      <TextField label="Routing key" name="binding-key" value={key} onChange={setKey} />
    </FormPanel>
  );
}

export function ExchangesPage() {
  const caps = useCaps();
  const exchanges = useApi<ExchangeInfo[]>(apiPath('exchanges'), 10_000);
  const bindings = useApi<BindingInfo[]>(apiPath('bindings'), 10_000);
  const vhosts = useApi<VhostInfo[]>(apiPath('vhosts'));
  const action = useAction();
  const vhostNames = (vhosts.data ?? []).map((v) => v.name);
  const reload = (): void => {
    exchanges.reload();
    bindings.reload();
  };
  return (
    <Page title="Exchanges and bindings">
      <ErrorNote error={exchanges.error} />
      <ActionNote action={action} />
      <Table
        testId="exchanges"
        rows={exchanges.data ?? []}
        rowKey={(x) => `${x.vhost}\u0000${x.name}`}
        columns={[
          {
            key: 'name',
            title: 'Name',
            sortValue: (x) => x.name,
            render: (x) => (x.name === '' ? '(default)' : x.name),
          },
          { key: 'vhost', title: 'Vhost', sortValue: (x) => x.vhost, render: (x) => x.vhost },
          { key: 'type', title: 'Type', sortValue: (x) => x.type, render: (x) => x.type },
          {
            key: 'flags',
            title: 'Features',
            render: (x) =>
              [
                x.durable ? 'durable' : 'transient',
                x.auto_delete ? 'auto-delete' : '',
                x.internal ? 'internal' : '',
              ]
                .filter(Boolean)
                .join(', '),
          },
          { key: 'policy', title: 'Policy', render: (x) => x.policy ?? '–' },
          { key: 'args', title: 'Arguments', render: (x) => text(x.arguments) },
          ...(caps.topology
            ? [
                {
                  key: 'delete',
                  title: '',
                  render: (x: ExchangeInfo) =>
                    x.name === '' || x.name.startsWith('amq.') ? null : (
                      <DangerButton
                        label="Delete"
                        confirm={`Delete the exchange '${x.name}'?`}
                        onConfirm={() =>
                          void action
                            .run(() => api('DELETE', apiPath('exchanges', x.vhost, x.name)), 'Deleted.')
                            .then(reload)
                        }
                      />
                    ),
                },
              ]
            : []),
        ]}
      />
      <Panel title="Bindings">
        <ErrorNote error={bindings.error} />
        <Table
          testId="bindings"
          rows={bindings.data ?? []}
          rowKey={(b) =>
            `${b.vhost}\u0000${b.source}\u0000${b.destination_type}\u0000${b.destination}\u0000${b.properties_key ?? b.routing_key}`
          }
          columns={[
            { key: 'vhost', title: 'Vhost', sortValue: (b) => b.vhost, render: (b) => b.vhost },
            {
              key: 'source',
              title: 'From',
              sortValue: (b) => b.source,
              render: (b) => (b.source === '' ? '(default)' : b.source),
            },
            {
              key: 'destination',
              title: 'To',
              sortValue: (b) => b.destination,
              render: (b) =>
                b.destination_type === 'queue' ? (
                  <a href={href('queue', b.vhost, b.destination)}>{b.destination}</a>
                ) : (
                  `exchange ${b.destination}`
                ),
            },
            {
              key: 'key',
              title: 'Routing key',
              sortValue: (b) => b.routing_key,
              render: (b) => b.routing_key,
            },
            { key: 'args', title: 'Arguments', render: (b) => text(b.arguments) },
            ...(caps.topology
              ? [
                  {
                    key: 'unbind',
                    title: '',
                    render: (b: BindingInfo) =>
                      b.source === '' || b.properties_key === undefined ? null : (
                        <DangerButton
                          label="Unbind"
                          confirm={`Remove the binding from '${b.source}' to '${b.destination}'?`}
                          onConfirm={() =>
                            void action
                              .run(
                                () =>
                                  api(
                                    'DELETE',
                                    apiPath(
                                      'bindings',
                                      b.vhost,
                                      'e',
                                      exchangeSegment(b.source),
                                      b.destination_type === 'queue' ? 'q' : 'e',
                                      b.destination,
                                      b.properties_key ?? '~',
                                    ),
                                  ),
                                'Unbound.',
                              )
                              .then(reload)
                          }
                        />
                      ),
                  },
                ]
              : []),
          ]}
        />
      </Panel>
      {caps.topology ? (
        <>
          <NewExchange vhosts={vhostNames} onMade={reload} />
          <NewBinding vhosts={vhostNames} onMade={reload} />
        </>
      ) : null}
    </Page>
  );
}
