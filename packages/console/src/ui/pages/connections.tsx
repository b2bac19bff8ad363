// Client connections and channels, the cluster's (every node answers for all): the list of
// connections with their node, user, peer and state; one connection's facts and channels, with a
// form to close it (320 CONNECTION_FORCED, the reason typed here reaching the client); and the list
// of channels. Administrators may close any connection, other users their own; the API checks
// that again. Administrator and monitoring users see every connection, others only their own.
import { useState } from 'preact/hooks';
import { api, apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { bytes, count, text, time } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { ChannelInfo, ConnectionInfo } from '../model.ts';
import { href, navigate } from '../route.ts';
import { ErrorNote, Facts, FormPanel, Loading, Page, Panel, Table, TextField } from '../widgets.tsx';

/** How often the lists refresh, ms. */
const REFRESH_MS = 5_000;

function ConnectionLink(props: { name: string }) {
  return <a href={href('connection', props.name)}>{props.name}</a>;
}

function ChannelTable(props: { channels: readonly ChannelInfo[]; testId: string }) {
  return (
    <Table
      testId={props.testId}
      rows={props.channels}
      rowKey={(c) => c.name}
      empty="No channels."
      columns={[
        { key: 'name', title: 'Channel', sortValue: (c) => c.name, render: (c) => c.name },
        {
          key: 'connection',
          title: 'Connection',
          render: (c) => <ConnectionLink name={c.connection_details.name} />,
        },
        { key: 'node', title: 'Node', sortValue: (c) => c.node, render: (c) => c.node },
        { key: 'user', title: 'User', sortValue: (c) => c.user, render: (c) => c.user },
        { key: 'vhost', title: 'Vhost', sortValue: (c) => c.vhost, render: (c) => c.vhost },
        {
          key: 'mode',
          title: 'Mode',
          render: (c) => (c.confirm ? 'confirm' : '–'),
        },
        {
          key: 'prefetch',
          title: 'Prefetch',
          numeric: true,
          sortValue: (c) => c.prefetch_count,
          render: (c) => (c.prefetch_count === 0 ? 'unlimited' : count(c.prefetch_count)),
        },
        {
          key: 'consumers',
          title: 'Consumers',
          numeric: true,
          sortValue: (c) => c.consumer_count,
          render: (c) => count(c.consumer_count),
        },
        {
          key: 'unacked',
          title: 'Unacked',
          numeric: true,
          sortValue: (c) => c.messages_unacknowledged,
          render: (c) => count(c.messages_unacknowledged),
        },
        { key: 'state', title: 'State', render: (c) => c.state },
      ]}
    />
  );
}

export function ConnectionsPage() {
  const connections = useApi<ConnectionInfo[]>(apiPath('connections'), REFRESH_MS);
  return (
    <Page title="Connections">
      <ErrorNote error={connections.error} />
      {connections.data === undefined && connections.error === undefined ? <Loading /> : null}
      <Table
        testId="connections"
        rows={connections.data ?? []}
        rowKey={(c) => c.name}
        empty="No client connections."
        columns={[
          {
            key: 'name',
            title: 'Name',
            sortValue: (c) => c.name,
            render: (c) => <ConnectionLink name={c.name} />,
          },
          { key: 'node', title: 'Node', sortValue: (c) => c.node, render: (c) => c.node },
          { key: 'user', title: 'User', sortValue: (c) => c.user, render: (c) => c.user },
          { key: 'vhost', title: 'Vhost', sortValue: (c) => c.vhost, render: (c) => c.vhost },
          { key: 'state', title: 'State', sortValue: (c) => c.state, render: (c) => c.state },
          {
            key: 'channels',
            title: 'Channels',
            numeric: true,
            sortValue: (c) => c.channels,
            render: (c) => count(c.channels),
          },
          { key: 'protocol', title: 'Protocol', render: (c) => c.protocol },
          {
            key: 'since',
            title: 'Connected',
            sortValue: (c) => c.connected_at,
            render: (c) => time(c.connected_at),
          },
        ]}
      />
    </Page>
  );
}

export function ChannelsPage() {
  const channels = useApi<ChannelInfo[]>(apiPath('channels'), REFRESH_MS);
  return (
    <Page title="Channels">
      <ErrorNote error={channels.error} />
      <ChannelTable channels={channels.data ?? []} testId="channels" />
    </Page>
  );
}

function CloseConnection(props: { name: string }) {
  const [reason, setReason] = useState('');
  return (
    <FormPanel
      title="Close this connection"
      submit="Close connection"
      action={useAction()}
      work={() =>
        api('DELETE', apiPath('connections', props.name), undefined, {
          'X-Reason': reason.trim() === '' ? 'Closed via the web console' : reason.trim(),
        })
      }
      doneText="Closed."
      onDone={() => navigate('connections')}
    >
      <TextField
        label="Reason (the client receives it)"
        name="close-reason"
        value={reason}
        onChange={setReason}
      />
    </FormPanel>
  );
}

export function ConnectionPage(props: { name: string }) {
  const caps = useCaps();
  const connection = useApi<ConnectionInfo>(apiPath('connections', props.name), REFRESH_MS);
  const channels = useApi<ChannelInfo[]>(apiPath('connections', props.name, 'channels'), REFRESH_MS);
  const c = connection.data;
  return (
    <Page title={`Connection ${props.name}`}>
      <ErrorNote error={connection.error} />
      {c === undefined ? (
        connection.error === undefined ? (
          <Loading />
        ) : null
      ) : (
        <>
          <Facts
            rows={[
              ['Node', c.node],
              ['User', c.user],
              ['Vhost', c.vhost],
              ['Client', `${c.peer_host}:${c.peer_port}`],
              ['Listener', `${c.host}:${c.port}`],
              ['Protocol', c.protocol],
              ['State', c.state],
              ['Connected', time(c.connected_at)],
              ['Heartbeat', c.timeout === 0 ? 'off' : `${c.timeout} s`],
              ['Frame max', bytes(c.frame_max)],
              ['Received / sent', `${bytes(c.recv_oct)} / ${bytes(c.send_oct)}`],
              ['Client properties', text(c.client_properties)],
            ]}
          />
          <Panel title="Channels">
            <ErrorNote error={channels.error} />
            <ChannelTable channels={channels.data ?? []} testId="connection-channels" />
          </Panel>
          {caps.admin || c.user === caps.user ? <CloseConnection name={props.name} /> : null}
        </>
      )}
    </Page>
  );
}
