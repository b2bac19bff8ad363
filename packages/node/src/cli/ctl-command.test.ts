import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../broker/broker.ts';
import { silentLogger } from '../logging/logger.ts';
import { ManagementServer } from '../management/management-server.ts';
import { FakeClusterView } from '../management/test-support/fake-cluster-view.ts';
import type { FakeQueueReplicas } from '../management/test-support/fake-queue-replicas.ts';
import { startClusteredManagement } from '../management/test-support/fake-queue-replicas.ts';
import { CTL_USAGE, ctlCommand } from './ctl-command.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let broker: Broker;
let server: ManagementServer;

beforeEach(async () => {
  broker = await Broker.start({ nodeName: 'ctl-test', logger: silentLogger(), memoryBudgetBytes: 0 });
  server = new ManagementServer({ broker, logger: silentLogger() });
  await server.start('127.0.0.1', 0);
});

afterEach(async () => {
  await server.close();
  await broker.shutdown();
});

async function ctl(...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await ctlCommand(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: { STYX_NODE: server.url },
  });
  return { code, stdout, stderr };
}

async function declare(name: string, vhost = '/'): Promise<void> {
  await broker.declareQueue(
    { user: 'guest', vhost, connectionId: 'c1' },
    {
      queue: name,
      passive: false,
      durable: true,
      exclusive: false,
      autoDelete: false,
      arguments: { entries: [] },
    },
  );
}

describe('policies', () => {
  it("runs the guide's command and shows the new DLX of an existing queue without a redeclare", async () => {
    await declare('orders');
    const set = await ctl(
      'set_policy',
      'DLX',
      '.*',
      '{"dead-letter-exchange":"my-dlx"}',
      '--apply-to',
      'queues',
    );
    expect(set).toEqual({
      code: 0,
      stdout:
        'Setting policy "DLX" for pattern ".*" to "{"dead-letter-exchange":"my-dlx"}" with priority "0" for vhost "/" ...\n',
      stderr: '',
    });
    expect(await ctl('list_queues', 'name', 'dead_letter_exchange', 'policy')).toEqual({
      code: 0,
      stdout: 'Listing queues for vhost / ...\nname\tdead_letter_exchange\tpolicy\norders\tmy-dlx\tDLX\n',
      stderr: '',
    });
    expect(broker.queueActor('/', 'orders')?.config().deadLetterExchange).toBe('my-dlx');
  });

  it('lists policies as a table and as JSON, takes options before the arguments, and clears them', async () => {
    await ctl('add_vhost', 'v');
    const set = await ctl('set_policy', '-p', 'v', '--priority', '7', 'TTL', '^a', '{"message-ttl":1000}');
    expect(set.code).toBe(0);
    expect((await ctl('list_policies', '-p', 'v')).stdout).toBe(
      'Listing policies for vhost "v" ...\nvhost\tname\tpattern\tapply-to\tdefinition\tpriority\n' +
        'v\tTTL\t^a\tall\t{"message-ttl":1000}\t7\n',
    );
    expect(JSON.parse((await ctl('list_policies', '--vhost', 'v', '--formatter', 'json')).stdout)).toEqual([
      {
        vhost: 'v',
        name: 'TTL',
        pattern: '^a',
        'apply-to': 'all',
        definition: { 'message-ttl': 1000 },
        priority: 7,
      },
    ]);
    expect(await ctl('clear_policy', '-p', 'v', 'TTL')).toEqual({
      code: 0,
      stdout: 'Clearing policy "TTL" on vhost "v" ...\n',
      stderr: '',
    });
    expect((await ctl('list_policies', '-p', 'v', '-q')).stdout).toBe(
      'vhost\tname\tpattern\tapply-to\tdefinition\tpriority\n',
    );
    expect((await ctl('list_policies', '-p', 'v', '-s')).stdout).toBe('');
  });

  it('accepts a negative priority as --priority=-N', async () => {
    expect((await ctl('set_policy', '--priority=-2', 'low', '.*', '{"expires":5}')).code).toBe(0);
    expect(broker.metadataView.policy('/', 'low')?.priority).toBe(-2);
  });

  it('prints the reason and exits 1 when the node refuses a policy', async () => {
    const r = await ctl('set_policy', 'bad', '.*', '{"dead-letter-exchnage":"x"}');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "styx ctl: Error: Validation failed: 'dead-letter-exchnage' is not a recognised",
    );
    const missing = await ctl('clear_policy', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("styx ctl: Error: no policy 'nope' in vhost '/'\n");
  });

  it('refuses bad usage with exit 2 and the command usage', async () => {
    for (const argv of [
      ['set_policy', 'p', '.*'],
      ['set_policy', 'p', '.*', '{nope'],
      ['set_policy', 'p', '.*', '{}', '--priority', 'high'],
      ['clear_policy', 'p', '--apply-to', 'queues'],
      ['list_queues', '--formatter', 'xml'],
      ['list_queues', '--timeout', '0'],
      ['list_queues', '--node', 'not a url'],
      ['list_queues', '--bogus'],
    ]) {
      const r = await ctl(...argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^styx ctl: /);
      expect(r.stderr).toContain(`Usage: styx ctl ${argv[0]}`);
      expect(r.stdout).toBe('');
    }
  });
});

describe('list_queues', () => {
  it('prints the default columns name and messages', async () => {
    await declare('b');
    await declare('a');
    await broker
      .queueActor('/', 'a')
      ?.enqueue(
        { exchange: '', routingKey: 'a', properties: {}, body: Buffer.from('x'), bcc: undefined },
        undefined,
      );
    expect((await ctl('list_queues')).stdout).toBe(
      'Listing queues for vhost / ...\nname\tmessages\na\t1\nb\t0\n',
    );
  });

  it('knows every documented column', async () => {
    await declare('q');
    const columns = [
      'name',
      'messages',
      'messages_ready',
      'messages_unacknowledged',
      'dead_letter_pending',
      'consumers',
      'policy',
      'durable',
      'auto_delete',
      'exclusive',
      'arguments',
      'dead_letter_exchange',
      'dead_letter_routing_key',
      'dead_lettered_rejected',
      'dead_lettered_expired',
      'dead_lettered_maxlen',
      'dead_lettered_delivery_limit',
    ];
    const r = await ctl('list_queues', '-q', ...columns);
    expect(r.stdout).toBe(
      `${columns.join('\t')}\nq\t0\t0\t0\t0\t0\t\ttrue\tfalse\tfalse\t{}\t\t\t0\t0\t0\t0\n`,
    );
    const json = JSON.parse(
      (await ctl('list_queues', '--formatter', 'json', 'name', 'dead_letter_exchange')).stdout,
    );
    expect(json).toEqual([{ name: 'q', dead_letter_exchange: null }]);
  });

  it('names the valid columns when given an unknown one', async () => {
    const r = await ctl('list_queues', 'name', 'colour');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("invalid column 'colour'; valid columns are: name, vhost, messages");
  });

  it('answers an unknown vhost with exit 1', async () => {
    const r = await ctl('list_queues', '-p', 'nope');
    expect(r).toMatchObject({ code: 1, stderr: "styx ctl: Error: no vhost 'nope'\n" });
  });
});

describe('users, vhosts and permissions', () => {
  it('adds, lists, re-tags, re-passwords and deletes users', async () => {
    expect((await ctl('add_user', 'bob', 'secret')).stdout).toBe('Adding user "bob" ...\n');
    const again = await ctl('add_user', 'bob', 'other');
    expect(again).toMatchObject({ code: 1, stderr: "styx ctl: Error: user 'bob' already exists\n" });
    expect((await ctl('set_user_tags', 'bob', 'administrator', 'policymaker')).code).toBe(0);
    expect((await ctl('list_users', '-q')).stdout).toBe(
      'user\ttags\nbob\t[administrator, policymaker]\nguest\t[administrator]\n',
    );
    expect((await ctl('change_password', 'bob', 'changed')).stdout).toBe(
      'Changing password for user "bob" ...\n',
    );
    const asBob = await ctl('list_users', '--username', 'bob', '--password', 'changed', '-q');
    expect(asBob.code).toBe(0);
    const oldPassword = await ctl('list_users', '--username', 'bob', '--password', 'secret');
    expect(oldPassword.code).toBe(1);
    expect(oldPassword.stderr).toContain("authentication failed for user 'bob'");
    expect((await ctl('change_password', 'nobody', 'x')).code).toBe(1);
    expect((await ctl('set_user_tags', 'nobody')).code).toBe(1);
    expect(broker.metadataView.user('nobody')).toBeUndefined();
    expect((await ctl('delete_user', 'bob')).stdout).toBe('Deleting user "bob" ...\n');
    expect((await ctl('delete_user', 'bob')).code).toBe(1);
  });

  it('adds, lists and deletes vhosts; sets, lists and clears permissions', async () => {
    expect((await ctl('add_vhost', 'team')).stdout).toBe('Adding vhost "team" ...\n');
    await ctl('add_user', 'bob', 'pw');
    // A user needs a management tag to use the management API at all (RabbitMQ's rule).
    await ctl('set_user_tags', 'bob', 'management');
    expect((await ctl('set_permissions', '-p', 'team', 'bob', '^bob', '', '.*')).stdout).toBe(
      'Setting permissions for user "bob" in vhost "team" ...\n',
    );
    expect((await ctl('list_permissions', '-p', 'team')).stdout).toBe(
      'Listing permissions for vhost "team" ...\nuser\tconfigure\twrite\tread\nbob\t^bob\t\t.*\n',
    );
    expect((await ctl('list_vhosts', '-q')).stdout).toBe('name\n/\nteam\n');
    // bob now sees team, and only team.
    const asBob = await ctl('list_vhosts', '-s', '--username', 'bob', '--password', 'pw');
    expect(asBob.stdout).toBe('team\n');
    expect((await ctl('clear_permissions', '-p', 'team', 'bob')).code).toBe(0);
    expect((await ctl('list_permissions', '-p', 'team', '-s')).stdout).toBe('');
    expect((await ctl('delete_vhost', 'team')).stdout).toBe('Deleting vhost "team" ...\n');
    expect((await ctl('list_vhosts', '-s')).stdout).toBe('/\n');
  });
});

describe('exchanges and bindings', () => {
  it('lists exchanges with the default columns name and type', async () => {
    expect((await ctl('list_exchanges')).stdout).toBe(
      'Listing exchanges for vhost / ...\nname\ttype\n\tdirect\namq.direct\tdirect\namq.fanout\tfanout\n' +
        'amq.headers\theaders\namq.match\theaders\namq.topic\ttopic\n',
    );
  });

  it("lists bindings, the default exchange's included", async () => {
    await declare('q');
    await broker.bind(
      { user: 'guest', vhost: '/', connectionId: 'c1' },
      'queue',
      'q',
      'amq.topic',
      'k.#',
      null,
    );
    expect((await ctl('list_bindings', '-q')).stdout).toBe(
      'source_name\tsource_kind\tdestination_name\tdestination_kind\trouting_key\targuments\n' +
        '\texchange\tq\tqueue\tq\t{}\n' +
        'amq.topic\texchange\tq\tqueue\tk.#\t{}\n',
    );
  });
});

describe('cluster_status, join_cluster and forget_cluster_node', () => {
  let view: FakeClusterView;
  let clustered: ManagementServer;
  /** `ctl` against the node whose cluster is `view`. */
  const onCluster = (...argv: string[]): Promise<Run> => ctl(...argv, '--node', clustered.url as string);

  beforeEach(async () => {
    view = new FakeClusterView();
    clustered = new ManagementServer({ broker, logger: silentLogger(), cluster: view });
    await clustered.start('127.0.0.1', 0);
  });

  afterEach(async () => {
    await clustered.close();
  });

  it('shows the members, the running ones and the metadata leader as rabbitmqctl does', async () => {
    expect(await onCluster('cluster_status')).toEqual({
      code: 0,
      stdout:
        'Cluster status of node styx-1 ...\n' +
        'Disk Nodes\n\nstyx-1\nstyx-2\nstyx-3\n\n' +
        'Running Nodes\n\nstyx-1\nstyx-3\n\n' +
        'Metadata Leader\n\nstyx-1\n\n' +
        'Members\n\n' +
        'name\tid\tcluster_address\trunning\tmetadata_role\n' +
        'styx-1\tid-1\t10.0.0.1:25680\ttrue\tvoter\n' +
        'styx-2\tid-2\t10.0.0.2:25680\tfalse\tvoter\n' +
        'styx-3\tid-3\t10.0.0.3:25680\ttrue\tlearner\n',
      stderr: '',
    });
    view.leader = undefined;
    const quiet = await onCluster('cluster_status', '-q');
    expect(quiet.stdout).toMatch(/^Disk Nodes\n/);
    expect(quiet.stdout).toContain('Metadata Leader\n\n(none)\n');
  });

  it('prints one JSON object with --formatter json', async () => {
    const r = await onCluster('cluster_status', '--formatter', 'json');
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(status).toMatchObject({
      node: 'styx-1',
      node_id: 'id-1',
      disk_nodes: ['styx-1', 'styx-2', 'styx-3'],
      running_nodes: ['styx-1', 'styx-3'],
      metadata_leader: 'styx-1',
    });
    expect((status.members as unknown[])[2]).toMatchObject({ name: 'styx-3', metadata_role: 'learner' });
  });

  it('shows a node without clustering as a cluster of one', async () => {
    const r = await ctl('cluster_status', '-q');
    expect(r.stdout).toBe(
      'Disk Nodes\n\nctl-test\n\nRunning Nodes\n\nctl-test\n\nMetadata Leader\n\nctl-test\n\n' +
        'Members\n\nname\tid\tcluster_address\trunning\tmetadata_role\nctl-test\tctl-test\t\ttrue\tvoter\n',
    );
  });

  it('joins the cluster of a HOST:PORT and forgets nodes by name or id', async () => {
    const url = clustered.url as string;
    expect(await onCluster('join_cluster', '10.0.0.9:25680')).toEqual({
      code: 0,
      stdout: `Clustering node ${url} with 10.0.0.9:25680 ...\n`,
      stderr: '',
    });
    expect(await onCluster('forget_cluster_node', 'styx-2')).toEqual({
      code: 0,
      stdout: 'Removing node styx-2 from the cluster ...\n',
      stderr: '',
    });
    expect((await onCluster('forget_cluster_node', 'id-3', '-q')).stdout).toBe('');
    expect(view.joined).toEqual(['10.0.0.9:25680']);
    expect(view.forgotten).toEqual(['styx-2', 'id-3']);
  });

  it("prints the node's refusal and exits 1", async () => {
    expect(await onCluster('forget_cluster_node', 'nope', '-q')).toEqual({
      code: 1,
      stdout: '',
      stderr: "styx ctl: Error: no cluster node 'nope'\n",
    });
    const alone = await ctl('join_cluster', '10.0.0.9:25680', '-q');
    expect(alone.code).toBe(1);
    expect(alone.stderr).toBe(
      'styx ctl: Error: cannot join a cluster: clustering is not enabled on this node (start it with ' +
        '--cluster-listen HOST:PORT)\n',
    );
  });

  it('refuses a bad address or a missing argument with exit 2 and the command usage', async () => {
    const bad = await onCluster('join_cluster', 'node-b');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^styx ctl: 'node-b' is not HOST:PORT .*\n\nUsage: styx ctl join_cluster HOST:PORT\n/,
    );
    const none = await onCluster('forget_cluster_node');
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^styx ctl: forget_cluster_node takes 1 argument, got 0/);
    expect(view.joined).toEqual([]);
  });

  it('explains each verb with --help', async () => {
    expect((await ctl('cluster_status', '--help')).stdout).toMatch(
      /^Usage: styx ctl cluster_status\n\nshow the cluster the node belongs to/,
    );
    expect((await ctl('join_cluster', '--help')).stdout).toContain('--cluster-listen address');
    expect((await ctl('forget_cluster_node', '--help')).stdout).toContain('may never rejoin');
    for (const verb of ['cluster_status', 'join_cluster HOST:PORT', 'forget_cluster_node NODE']) {
      expect(CTL_USAGE).toContain(`  ${verb}\n`);
    }
  });
});

describe('the replicas of queues: add_member, delete_member, grow, shrink, rebalance, quorum_status', () => {
  let replicas: FakeQueueReplicas;
  let clustered: ManagementServer;
  /** `ctl` against a clustered node whose queue replicas are `replicas`. */
  const onCluster = (...argv: string[]): Promise<Run> => ctl(...argv, '--node', clustered.url as string);

  beforeEach(async () => {
    ({ server: clustered, replicas } = await startClusteredManagement(broker));
    await declare('orders');
    await declare('events');
    replicas.place('/', 'orders', ['id-1', 'id-2']);
    replicas.place('/', 'events', ['id-2', 'id-3'], 'id-3');
  });

  afterEach(async () => {
    await clustered.close();
  });

  it('adds and deletes a member by node name or id', async () => {
    expect(await onCluster('add_member', 'orders', 'styx-3')).toEqual({
      code: 0,
      stdout: 'Adding a replica for queue orders in vhost / on node styx-3 ...\n',
      stderr: '',
    });
    expect(await onCluster('delete_member', '--vhost', '/', 'orders', 'id-2', '-q')).toEqual({
      code: 0,
      stdout: '',
      stderr: '',
    });
    expect(replicas.placements.get(JSON.stringify(['/', 'orders']))?.members).toEqual(['id-1', 'id-3']);
  });

  it("prints the node's refusal and exits 1", async () => {
    expect(await onCluster('add_member', 'orders', 'styx-1', '-q')).toEqual({
      code: 1,
      stdout: '',
      stderr: "styx ctl: Error: node styx-1 already holds a replica of 'orders'\n",
    });
    expect((await onCluster('delete_member', 'nope', 'styx-1')).stderr).toBe(
      "styx ctl: Error: no queue 'nope' in vhost '/'\n",
    );
    expect((await onCluster('add_member', 'orders', 'styx-9')).stderr).toBe(
      "styx ctl: Error: no node 'styx-9' in the cluster\n",
    );
  });

  it('grows onto a node with a strategy and patterns, printing how many queues got a replica', async () => {
    expect(await onCluster('grow', 'styx-3', 'all', '--queue-pattern', '^ord')).toEqual({
      code: 0,
      stdout:
        'Growing all queues matching vhost pattern ".*" and queue pattern "^ord" to add replicas on node styx-3 ...\n' +
        'Added a replica on node styx-3 to 1 queue.\n',
      stderr: '',
    });
    const json = await onCluster('grow', 'id-1', 'even', '--vhost-pattern', '.*', '--formatter', 'json');
    expect(JSON.parse(json.stdout)).toEqual({ node: 'styx-1', strategy: 'even', added: 1 });
    expect(replicas.placements.get(JSON.stringify(['/', 'events']))?.members).toEqual([
      'id-2',
      'id-3',
      'id-1',
    ]);
  });

  it('shrinks a node away, naming the queues whose last replica it keeps', async () => {
    await declare('solo');
    replicas.place('/', 'solo', ['id-2']);
    expect(await onCluster('shrink', 'styx-2', '-q')).toEqual({
      code: 0,
      stdout:
        'Removed the replica on node styx-2 of 2 queues.\n' +
        'Kept the replica of queue solo in vhost /: it is the last one.\n',
      stderr: '',
    });
  });

  it("rebalances leaders and lists the transfers; takes rabbitmq-queues' type argument", async () => {
    replicas.online = new Set(['id-1', 'id-2', 'id-3']);
    replicas.place('/', 'events', ['id-1', 'id-2'], 'id-1');
    expect(await onCluster('rebalance', 'quorum')).toEqual({
      code: 0,
      stdout: 'Re-balancing leaders of queues ...\nvhost\tname\tfrom\tto\n/\tevents\tstyx-1\tstyx-2\n',
      stderr: '',
    });
    const json = await onCluster('rebalance', '--formatter', 'json');
    expect(JSON.parse(json.stdout)).toEqual([]);
    const classic = await onCluster('rebalance', 'classic');
    expect(classic.code).toBe(2);
    expect(classic.stderr).toMatch(
      /^styx ctl: the queue type must be all or quorum, got 'classic'\n\nUsage: styx ctl rebalance/,
    );
  });

  it("shows quorum_status as a table of the leader's view, or the node's JSON", async () => {
    expect(await onCluster('quorum_status', 'events')).toEqual({
      code: 0,
      stdout:
        'Status of quorum queue events in vhost / (leader styx-3, term 4, commit index 42) ...\n' +
        'Node Name\tRaft State\tMatch Index\tOnline\n' +
        'styx-2\tfollower\t40\tfalse\n' +
        'styx-3\tleader\t42\ttrue\n',
      stderr: '',
    });
    const json = JSON.parse(
      (await onCluster('quorum_status', '-p', '/', 'events', '--formatter', 'json')).stdout,
    );
    expect(json).toMatchObject({ name: 'events', leader: 'styx-3', commit_index: 42 });
    expect(json.members[1]).toEqual({
      node: 'styx-3',
      node_id: 'id-3',
      role: 'leader',
      match_index: 42,
      online: true,
    });
  });

  it('lists queues with their leader and members by default on a clustered node', async () => {
    expect((await onCluster('list_queues')).stdout).toBe(
      'Listing queues for vhost / ...\nname\tmessages\tleader\tmembers\n' +
        'events\t0\tstyx-3\t[styx-2, styx-3]\n' +
        'orders\t0\tstyx-1\t[styx-1, styx-2]\n',
    );
    expect((await onCluster('list_queues', '-s', 'name', 'online')).stdout).toBe(
      'events\t[styx-3]\norders\t[styx-1]\n',
    );
    // A node alone: no replica columns unless asked for, and then empty.
    expect((await ctl('list_queues', '-q')).stdout).toBe('name\tmessages\nevents\t0\norders\t0\n');
    expect((await ctl('list_queues', '-s', 'name', 'leader')).stdout).toBe('events\t\norders\t\n');
  });

  it('refuses bad usage with exit 2 and the command usage, before asking the node', async () => {
    for (const [argv, reason] of [
      [['add_member', 'orders'], 'add_member takes 2 arguments, got 1'],
      [['delete_member', 'a', 'b', 'c'], 'delete_member takes 2 arguments, got 3'],
      [['grow', 'styx-3'], 'grow takes 2 arguments, got 1'],
      [['grow', 'styx-3', 'odd'], "the strategy must be all or even, got 'odd'"],
      [
        ['grow', 'styx-3', 'all', '--queue-pattern', '('],
        '--queue-pattern is not a valid regular expression',
      ],
      [['shrink', 'styx-2', '--vhost-pattern', '.*'], 'shrink does not take --vhost-pattern'],
      [['quorum_status'], 'quorum_status takes 1 argument, got 0'],
      [['rebalance', 'all', 'extra'], 'rebalance takes at most 1 argument, got 2'],
    ] as const) {
      const r = await onCluster(...argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toContain(`styx ctl: ${reason}`);
      expect(r.stderr).toContain(`Usage: styx ctl ${argv[0]}`);
      expect(r.stdout).toBe('');
    }
    expect(replicas.placements.get(JSON.stringify(['/', 'orders']))?.members).toEqual(['id-1', 'id-2']);
  });

  it('says a node without clustering is not in a cluster, exit 1', async () => {
    for (const argv of [
      ['add_member', 'orders', 'styx-2'],
      ['delete_member', 'orders', 'styx-2'],
      ['grow', 'styx-2', 'all'],
      ['shrink', 'styx-2'],
      ['rebalance'],
      ['quorum_status', 'orders'],
    ]) {
      const r = await ctl(...argv, '-q');
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.stderr).toMatch(/^styx ctl: Error: this node is not in a cluster: /);
    }
  });

  it('explains each verb with --help', async () => {
    for (const [verb, text] of [
      ['add_member', 'as a learner'],
      ['delete_member', 'Its last replica is refused'],
      ['grow', '--queue-pattern REGEX   only queues whose name matches it'],
      ['shrink', 'except where it is the last one'],
      ['rebalance', "'all' and 'quorum'"],
      ['quorum_status', 'match index'],
    ]) {
      const r = await ctl(verb as string, '--help');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: styx ctl ${verb}`));
      expect(r.stdout).toContain(text);
    }
    for (const usage of [
      'add_member [-p vhost] QUEUE NODE',
      'delete_member [-p vhost] QUEUE NODE',
      'grow NODE all|even [--vhost-pattern REGEX] [--queue-pattern REGEX]',
      'shrink NODE',
      'rebalance [all|quorum]',
      'quorum_status [-p vhost] QUEUE',
    ]) {
      expect(CTL_USAGE).toContain(`  ${usage}\n`);
    }
  });
});

describe('a leading `--` (as `pnpm styx ctl -- …` hands it on)', () => {
  it('is dropped: the command and its options after it are read as usual', async () => {
    await declare('q');
    expect(await ctl('--', 'list_queues', '-s', '-p', '/', 'name')).toEqual({
      code: 0,
      stdout: 'q\n',
      stderr: '',
    });
    expect((await ctl('--', '--help')).code).toBe(0);
  });

  it('does not let unknown flags or stray arguments through: exit 2 with the usage', async () => {
    const flag = await ctl('--', 'list_queues', '--colour');
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/^styx ctl: .*'--colour'.*\n\nUsage: styx ctl list_queues/);
    const stray = await ctl('--', 'clear_policy', 'a', 'b');
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/^styx ctl: clear_policy takes 1 argument, got 2/);
    // A later `--` still ends the options: `-p` after it is a (bad) column, not a vhost.
    const later = await ctl('--', 'list_queues', '--', '-p', '/');
    expect(later.code).toBe(2);
    expect(later.stderr).toContain("invalid column '-p'");
  });
});

describe('help and failures to reach the node', () => {
  it('prints the usage with --help (exit 0) and without a command (exit 2)', async () => {
    expect(await ctl('--help')).toEqual({ code: 0, stdout: `${CTL_USAGE}\n`, stderr: '' });
    const none = await ctl();
    expect(none.code).toBe(2);
    expect(none.stderr).toBe(`${CTL_USAGE}\n`);
    for (const command of [
      'set_policy',
      'clear_policy',
      'list_policies',
      'list_queues',
      'add_user',
      'set_permissions',
    ]) {
      expect(CTL_USAGE).toContain(`  ${command} `);
    }
  });

  it('prints each command usage with --help', async () => {
    const r = await ctl('set_policy', '--help');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^Usage: styx ctl set_policy \[-p vhost\] \[--priority N\] \[--apply-to queues\|exchanges\|all\] name pattern definition\n/,
    );
    expect(r.stdout).toContain('--apply-to KIND');
    const list = await ctl('list_queues', '-h');
    expect(list.stdout).toContain('dead_lettered_delivery_limit');
  });

  it('names an unknown command', async () => {
    const r = await ctl('list_queuez');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^styx ctl: unknown command 'list_queuez'\n\nUsage: styx ctl <command>/);
  });

  it('says the node is not reachable at its URL, exit 69', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const address = closed.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const r = await ctl('list_queues', '--node', `http://127.0.0.1:${port}`);
    expect(r.code).toBe(69);
    expect(r.stderr).toContain(`the node is not reachable at http://127.0.0.1:${port} (ECONNREFUSED)`);
  });
});
