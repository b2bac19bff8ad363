// The console's shell: the login gate, the navigation, and the view the URL's fragment names.
import { useEffect, useState } from 'preact/hooks';
import type { SessionInfo } from './api.ts';
import { currentSession, logOut, whenSessionLost } from './api.ts';
import { CapsContext, capsOf } from './caps.ts';
import { AdminPage } from './pages/admin.tsx';
import { ChannelsPage, ConnectionPage, ConnectionsPage } from './pages/connections.tsx';
import { ExchangesPage } from './pages/exchanges.tsx';
import { InspectorPage } from './pages/inspector.tsx';
import { LoginPage } from './pages/login.tsx';
import { NodesPage } from './pages/nodes.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { PoliciesPage } from './pages/policies.tsx';
import { QueuePage } from './pages/queue.tsx';
import { QueuesPage } from './pages/queues.tsx';
import { RedrivePage } from './pages/redrive.tsx';
import { href, useRoute } from './route.ts';
import { ErrorNote, Loading } from './widgets.tsx';

const NAV: readonly (readonly [string, string])[] = [
  ['overview', 'Overview'],
  ['nodes', 'Nodes'],
  ['connections', 'Connections'],
  ['channels', 'Channels'],
  ['queues', 'Queues'],
  ['exchanges', 'Exchanges'],
  ['policies', 'Policies'],
  ['admin', 'Users & vhosts'],
];

function View(props: { route: readonly string[] }) {
  const [view = 'overview', a, b] = props.route;
  switch (view) {
    case 'nodes':
      return <NodesPage />;
    case 'queues':
      return <QueuesPage />;
    case 'queue':
      return a !== undefined && b !== undefined ? <QueuePage vhost={a} name={b} /> : <QueuesPage />;
    case 'inspect':
      return a !== undefined && b !== undefined ? <InspectorPage vhost={a} name={b} /> : <QueuesPage />;
    case 'redrive':
      return a !== undefined && b !== undefined ? <RedrivePage vhost={a} name={b} /> : <QueuesPage />;
    case 'connections':
      return <ConnectionsPage />;
    case 'connection':
      return a !== undefined ? <ConnectionPage name={a} /> : <ConnectionsPage />;
    case 'channels':
      return <ChannelsPage />;
    case 'exchanges':
      return <ExchangesPage />;
    case 'policies':
      return <PoliciesPage />;
    case 'admin':
      return <AdminPage />;
    default:
      return <OverviewPage />;
  }
}

export function App() {
  const [session, setSession] = useState<SessionInfo | undefined>(undefined);
  const [checked, setChecked] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const route = useRoute();

  useEffect(() => {
    whenSessionLost(() => setSession(undefined));
    currentSession()
      .then((s) => setSession(s))
      .catch((err: unknown) => setError(err as Error))
      .finally(() => setChecked(true));
  }, []);

  if (!checked) return <Loading />;
  if (error !== undefined) return <ErrorNote error={error} />;
  if (session === undefined) return <LoginPage onLogin={setSession} />;
  const caps = capsOf(session.user, session.tags);
  const current = route[0] ?? 'overview';
  const section =
    current === 'queue' || current === 'inspect' || current === 'redrive'
      ? 'queues'
      : current === 'connection'
        ? 'connections'
        : current;
  return (
    <CapsContext.Provider value={caps}>
      <header class="top">
        <a class="brand" href={href('overview')}>
          Styx
        </a>
        <nav>
          {NAV.filter(([key]) =>
            key === 'nodes'
              ? caps.nodes
              : key === 'policies'
                ? caps.policies
                : key === 'admin'
                  ? caps.admin
                  : true,
          ).map(([key, title]) => (
            <a key={key} href={href(key)} class={section === key ? 'active' : undefined}>
              {title}
            </a>
          ))}
        </nav>
        <span class="who">
          <span data-testid="whoami">{session.user}</span>{' '}
          <span class="muted">({session.tags.join(', ')})</span>
          <button
            type="button"
            onClick={() => {
              void logOut().finally(() => setSession(undefined));
            }}
          >
            Log out
          </button>
        </span>
      </header>
      <main>
        <View route={route} />
      </main>
    </CapsContext.Provider>
  );
}
