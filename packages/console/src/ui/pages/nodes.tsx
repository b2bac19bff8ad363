// Nodes: the cluster's members (online, metadata leader), their memory, disk, descriptors and
// sockets against their limits with any resource alarm (which blocks publishers cluster-wide), the
// queue leaders and replicas each holds, and on demand the queue consistency check: each replica's Raft term and how far its
// applied index trails its group's commit index.
import { useState } from 'preact/hooks';
import { apiPath, getReport } from '../api.ts';
import { bytes, count } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { NodeInfo, QueueInfo } from '../model.ts';
import { href } from '../route.ts';
import { ActionNote, Badge, ErrorNote, Loading, Page, Panel, Table } from '../widgets.tsx';

interface ClusterInfo {
  readonly self: { id: string; name: string };
  readonly metadata_leader: { id: string; name: string | null } | null;
  readonly members: readonly NodeInfo[];
}

interface ReplicaCheck {
  readonly node: string;
  readonly online: boolean;
  readonly role?: string;
  readonly term?: number;
  readonly applied_index?: number;
  readonly commit_index?: number;
  readonly missing_bodies?: number;
  readonly error?: string;
}

interface QueueCheck {
  readonly vhost: string;
  readonly name: string;
  readonly ok: boolean;
  readonly problems: readonly string[];
  /** Why its replicas were not compared (status `not_compared`: no problem found, none verified). */
  readonly reason?: string;
  readonly replicas: readonly ReplicaCheck[];
}

interface NodeRaft {
  replicas: number;
  leaders: number;
  maxLag: number;
  terms: Set<number>;
  offline: number;
}

/** Per node, from a check of every queue: replicas checked, leaders, worst commit lag, terms seen. */
function raftByNode(checks: readonly QueueCheck[]): Map<string, NodeRaft> {
  const out = new Map<string, NodeRaft>();
  for (const check of checks) {
    const commit = Math.max(0, ...check.replicas.map((r) => r.commit_index ?? 0));
    for (const r of check.replicas) {
      let n = out.get(r.node);
      if (n === undefined) {
        n = { replicas: 0, leaders: 0, maxLag: 0, terms: new Set(), offline: 0 };
        out.set(r.node, n);
      }
      n.replicas++;
      if (!r.online) {
        n.offline++;
        continue;
      }
      if (r.role === 'leader') n.leaders++;
      if (r.term !== undefined) n.terms.add(r.term);
      n.maxLag = Math.max(n.maxLag, commit - (r.applied_index ?? commit));
    }
  }
  return out;
}

/** `used / limit`, each with `format`; '–' when unknown, `used` alone without a limit. */
function against(
  used: number | null | undefined,
  limit: number | null | undefined,
  format: (n: number) => string,
): string {
  if (used === null || used === undefined) return '–';
  return limit === null || limit === undefined || limit === 0
    ? format(used)
    : `${format(used)} / ${format(limit)}`;
}

/** The node's resource alarms in effect: 'memory', 'disk'. */
function alarmsOf(n: NodeInfo): string[] {
  return [...(n.mem_alarm === true ? ['memory'] : []), ...(n.disk_free_alarm === true ? ['disk'] : [])];
}

function heldBy(queues: readonly QueueInfo[]): Map<string, { leaders: number; replicas: number }> {
  const out = new Map<string, { leaders: number; replicas: number }>();
  const at = (node: string) => {
    let held = out.get(node);
    if (held === undefined) {
      held = { leaders: 0, replicas: 0 };
      out.set(node, held);
    }
    return held;
  };
  for (const q of queues) {
    const members = q.members ?? [q.node];
    for (const m of members) at(m).replicas++;
    const leader = q.leader === undefined ? q.node : q.leader;
    if (leader !== null) at(leader).leaders++;
  }
  return out;
}

export function NodesPage() {
  const cluster = useApi<ClusterInfo>(apiPath('cluster'), 5000);
  // Every queue's placement: read once when the page opens (with thousands of queues the whole list
  // is a heavy request, not one to repeat every few seconds); *Check queue replicas* refreshes it.
  const queues = useApi<QueueInfo[]>(apiPath('queues'));
  const [checks, setChecks] = useState<readonly QueueCheck[] | undefined>(undefined);
  const checking = useAction();
  const c = cluster.data;
  if (c === undefined) return cluster.error === undefined ? <Loading /> : <ErrorNote error={cluster.error} />;
  const held = heldBy(queues.data ?? []);
  const raft = checks === undefined ? undefined : raftByNode(checks);
  const lagging = (checks ?? []).filter((q) => !q.ok);
  const alarmed = c.members.filter((n) => alarmsOf(n).length > 0);
  return (
    <Page
      title="Nodes"
      actions={
        <button
          type="button"
          disabled={checking.busy}
          onClick={() =>
            void checking.run(async () => {
              const report = await getReport<{ queues: QueueCheck[] }>(apiPath('checks', 'queues'));
              setChecks(report.queues);
              queues.reload();
            }, 'Checked every replicated queue.')
          }
        >
          Check queue replicas (terms, commit lag)
        </button>
      }
    >
      <ErrorNote error={cluster.error} />
      <ActionNote action={checking} />
      <p>
        This node: <strong>{c.self.name}</strong> · metadata leader:{' '}
        <strong>
          {c.metadata_leader === null
            ? 'none (no quorum?)'
            : (c.metadata_leader.name ?? c.metadata_leader.id)}
        </strong>
      </p>
      {alarmed.length === 0 ? null : (
        <p data-testid="alarms">
          <Badge kind="warn">alarm</Badge> Publishers are blocked on every node:{' '}
          {alarmed.map((n) => `${alarmsOf(n).join(' and ')} alarm on ${n.name}`).join('; ')}.
        </p>
      )}
      <Table
        testId="nodes"
        rows={c.members}
        rowKey={(n) => n.id}
        columns={[
          {
            key: 'name',
            title: 'Node',
            render: (n) => `${n.name}${n.is_self ? ' (this node)' : ''}`,
            sortValue: (n) => n.name,
          },
          {
            key: 'online',
            title: 'State',
            render: (n) => (n.running ? <Badge kind="ok">online</Badge> : <Badge kind="warn">offline</Badge>),
          },
          {
            key: 'meta',
            title: 'Metadata',
            render: (n) => (n.is_metadata_leader ? <Badge kind="info">leader</Badge> : n.metadata_role),
          },
          { key: 'address', title: 'Cluster address', render: (n) => n.cluster_address || '–' },
          {
            key: 'alarms',
            title: 'Alarms',
            render: (n) => {
              const alarms = alarmsOf(n);
              if (alarms.length > 0) return <Badge kind="warn">{alarms.join(', ')}</Badge>;
              return n.mem_alarm === null || n.mem_alarm === undefined ? '–' : 'none';
            },
          },
          {
            key: 'memory',
            title: 'Memory / budget',
            numeric: true,
            render: (n) => against(n.mem_used, n.mem_limit, bytes),
          },
          {
            key: 'disk',
            title: 'Disk free / limit',
            numeric: true,
            render: (n) => against(n.disk_free, n.disk_free_limit, bytes),
          },
          {
            key: 'fds',
            title: 'File descriptors',
            numeric: true,
            render: (n) => against(n.fd_used, n.fd_total, count),
          },
          {
            key: 'sockets',
            title: 'Client connections',
            numeric: true,
            render: (n) =>
              n.sockets_used === null || n.sockets_used === undefined ? '–' : count(n.sockets_used),
          },
          {
            key: 'leaders',
            title: 'Queue leaders',
            numeric: true,
            render: (n) => count(held.get(n.name)?.leaders ?? 0),
          },
          {
            key: 'replicas',
            title: 'Replicas held',
            numeric: true,
            render: (n) => count(held.get(n.name)?.replicas ?? 0),
          },
          {
            key: 'terms',
            title: 'Raft terms',
            render: (n) => {
              const terms = [...(raft?.get(n.name)?.terms ?? [])].sort((a, b) => a - b);
              return terms.length === 0
                ? '–'
                : `${terms[0]}${terms.length > 1 ? `…${terms[terms.length - 1]}` : ''}`;
            },
          },
          {
            key: 'lag',
            title: 'Worst commit lag',
            numeric: true,
            render: (n) => (raft === undefined ? '–' : count(raft.get(n.name)?.maxLag ?? 0)),
          },
        ]}
      />
      {checks === undefined ? null : (
        <Panel title={`Queues with problems (${lagging.length} of ${checks.length})`}>
          <Table
            rows={lagging}
            rowKey={(q) => `${q.vhost}\u0000${q.name}`}
            empty="Every replica of every queue is whole and agrees."
            columns={[
              {
                key: 'q',
                title: 'Queue',
                render: (q) => <a href={href('queue', q.vhost, q.name)}>{q.name}</a>,
              },
              { key: 'v', title: 'Vhost', render: (q) => q.vhost },
              {
                key: 'p',
                title: 'Problems',
                render: (q) => q.problems.join('; ') || `not compared: ${q.reason ?? 'no reason given'}`,
              },
            ]}
          />
        </Panel>
      )}
    </Page>
  );
}
