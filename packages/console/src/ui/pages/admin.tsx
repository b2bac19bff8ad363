// Users, vhosts and permissions (administrators only: the API refuses everyone else).
import { useState } from 'preact/hooks';
import { api, apiPath } from '../api.ts';
import { useCaps } from '../caps.ts';
import { count } from '../format.ts';
import type { Loaded } from '../hooks.ts';
import { useAction, useApi } from '../hooks.ts';
import type { PermissionInfo, UserInfo, VhostInfo } from '../model.ts';
import {
  ActionNote,
  CheckField,
  DangerButton,
  ErrorNote,
  FormPanel,
  Page,
  Panel,
  SelectField,
  Table,
  TextField,
} from '../widgets.tsx';

const TAGS = ['administrator', 'monitoring', 'management', 'policymaker'];

/** A row's delete button: confirm, call DELETE `path`, then reload the list. */
function DeleteButton(props: {
  label?: string;
  what: string;
  path: string;
  action: ReturnType<typeof useAction>;
  onDone: () => void;
}) {
  return (
    <DangerButton
      label={props.label ?? 'Delete'}
      confirm={`Delete ${props.what}?`}
      onConfirm={() =>
        void props.action.run(() => api('DELETE', props.path), `Deleted ${props.what}.`).then(props.onDone)
      }
    />
  );
}

function UsersPanel() {
  const users = useApi<UserInfo[]>(apiPath('users'), 15_000);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [tags, setTags] = useState<readonly string[]>([]);
  const rows = useAction();
  return (
    <>
      <Panel title="Users">
        <ErrorNote error={users.error} />
        <ActionNote action={rows} />
        <Table
          testId="users"
          rows={users.data ?? []}
          rowKey={(u) => u.name}
          columns={[
            { key: 'name', title: 'Name', sortValue: (u) => u.name, render: (u) => u.name },
            { key: 'tags', title: 'Tags', render: (u) => u.tags.join(', ') || '–' },
            {
              key: 'actions',
              title: '',
              render: (u) => (
                <span class="row-actions">
                  <button
                    type="button"
                    onClick={() => {
                      setName(u.name);
                      setTags(u.tags);
                      setPassword('');
                    }}
                  >
                    Edit
                  </button>
                  <DeleteButton
                    what={`the user '${u.name}'`}
                    path={apiPath('users', u.name)}
                    action={rows}
                    onDone={users.reload}
                  />
                </span>
              ),
            },
          ]}
        />
      </Panel>
      <FormPanel
        title="Add or update a user"
        submit="Save user"
        action={useAction()}
        work={() => api('PUT', apiPath('users', name), password === '' ? { tags } : { password, tags })}
        doneText={`User '${name}' saved.`}
        onDone={() => {
          users.reload();
          setPassword('');
        }}
        disabled={name === ''}
      >
        <TextField label="Name" name="user-name" value={name} onChange={setName} required />
        <TextField
          label="Password"
          name="user-password"
          type="password"
          hint="empty keeps an existing user's password"
          value={password}
          onChange={setPassword}
        />
        {TAGS.map((tag) => (
          <CheckField
            key={tag}
            label={tag}
            name={`tag-${tag}`}
            checked={tags.includes(tag)}
            onChange={(on) => setTags(on ? [...tags, tag] : tags.filter((t) => t !== tag))}
          />
        ))}
      </FormPanel>
    </>
  );
}

function VhostsPanel(props: { vhosts: Loaded<VhostInfo[]> }) {
  const { vhosts } = props;
  const [name, setName] = useState('');
  const rows = useAction();
  return (
    <>
      <Panel title="Virtual hosts">
        <ErrorNote error={vhosts.error} />
        <ActionNote action={rows} />
        <Table
          testId="vhosts"
          rows={vhosts.data ?? []}
          rowKey={(v) => v.name}
          columns={[
            { key: 'name', title: 'Name', sortValue: (v) => v.name, render: (v) => v.name },
            {
              key: 'messages',
              title: 'Messages',
              numeric: true,
              sortValue: (v) => v.messages,
              render: (v) => count(v.messages),
            },
            {
              key: 'delete',
              title: '',
              render: (v) => (
                <DeleteButton
                  what={`the vhost '${v.name}' with every queue, exchange and message in it`}
                  path={apiPath('vhosts', v.name)}
                  action={rows}
                  onDone={vhosts.reload}
                />
              ),
            },
          ]}
        />
      </Panel>
      <FormPanel
        title="Add a vhost"
        submit="Add vhost"
        action={useAction()}
        work={() => api('PUT', apiPath('vhosts', name))}
        doneText={`Vhost '${name}' added.`}
        onDone={vhosts.reload}
        disabled={name === ''}
      >
        <TextField label="Name" name="vhost-name" value={name} onChange={setName} required />
      </FormPanel>
    </>
  );
}

function PermissionsPanel(props: { vhosts: readonly string[] }) {
  const permissions = useApi<PermissionInfo[]>(apiPath('permissions'), 15_000);
  const [user, setUser] = useState('');
  const [vhost, setVhost] = useState('/');
  const [configure, setConfigure] = useState('.*');
  const [write, setWrite] = useState('.*');
  const [read, setRead] = useState('.*');
  const rows = useAction();
  return (
    <>
      <Panel title="Permissions">
        <ErrorNote error={permissions.error} />
        <ActionNote action={rows} />
        <Table
          testId="permissions"
          rows={permissions.data ?? []}
          rowKey={(p) => `${p.vhost}\u0000${p.user}`}
          columns={[
            { key: 'user', title: 'User', sortValue: (p) => p.user, render: (p) => p.user },
            { key: 'vhost', title: 'Vhost', sortValue: (p) => p.vhost, render: (p) => p.vhost },
            { key: 'configure', title: 'Configure', render: (p) => p.configure },
            { key: 'write', title: 'Write', render: (p) => p.write },
            { key: 'read', title: 'Read', render: (p) => p.read },
            {
              key: 'delete',
              title: '',
              render: (p) => (
                <DeleteButton
                  label="Clear"
                  what={`the permissions of '${p.user}' in '${p.vhost}'`}
                  path={apiPath('permissions', p.vhost, p.user)}
                  action={rows}
                  onDone={permissions.reload}
                />
              ),
            },
          ]}
        />
      </Panel>
      <FormPanel
        title="Set permissions"
        submit="Set permissions"
        action={useAction()}
        work={() => api('PUT', apiPath('permissions', vhost, user), { configure, write, read })}
        doneText={`Permissions of '${user}' set.`}
        onDone={permissions.reload}
        disabled={user === ''}
      >
        <TextField label="User" name="permission-user" value={user} onChange={setUser} required />
        <SelectField
          label="Vhost"
          name="permission-vhost"
          value={vhost}
          options={props.vhosts}
          onChange={setVhost}
        />
        <TextField label="Configure" name="permission-configure" value={configure} onChange={setConfigure} />
        <TextField label="Write" name="permission-write" value={write} onChange={setWrite} />
        <TextField label="Read" name="permission-read" value={read} onChange={setRead} />
      </FormPanel>
    </>
  );
}

export function AdminPage() {
  const caps = useCaps();
  const vhosts = useApi<VhostInfo[]>(caps.admin ? apiPath('vhosts') : undefined, 15_000);
  if (!caps.admin) {
    return (
      <Page title="Users & vhosts">
        <p>Only administrators manage users, vhosts and permissions.</p>
      </Page>
    );
  }
  return (
    <Page title="Users, vhosts and permissions">
      <UsersPanel />
      <VhostsPanel vhosts={vhosts} />
      <PermissionsPanel vhosts={(vhosts.data ?? []).map((v) => v.name)} />
    </Page>
  );
}
