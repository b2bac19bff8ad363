// What the tests do with each command the documentation shows (test/support/doc-commands.ts finds
// them): every command must match an entry here, so a command added to the docs fails
// docs-commands.test.ts until someone says how it is checked, and an entry no command matches fails
// it too (the table cannot keep rules for commands that are gone).
//
// - run: run exactly as written by the group's test (docs-commands-broker.test.ts: one `styx server`
//   started from a config file; docs-commands-cluster.test.ts: the local cluster), which lists the
//   group's commands in the order it runs them and fails when that list and this table disagree.
// - ranBy: run as written by another test file (named), which reads it from the README itself.
// - help: the command as written (without a trailing `# comment` or `[...]`), plus `--help`, run in
//   /bin/sh from the repository's root: exit 0 means the program exists and its parser took every
//   flag and value the docs show, without doing the (long, or machine-changing) work.
// - usage: a synopsis with placeholders (`[--seed S]`, `QUEUE`, `HOST:PORT`): its program's `--help`
//   (the words before the first option, placeholder or bracket) exits 0 and names every flag it shows.
// - skip: not run, with the reason; `files` it names must exist in the repository.
//
// Placeholders, when a command is run: an UPPERCASE word (ID, PID, NAME) is a value an earlier step
// of the same test printed or made (a redrive's id, the local cluster's pid), as the group's test says
// next to the command; machine paths (/etc/styx, /var/lib/styx, /backup) are rooted in the test's
// temporary directory; the documented ports (5680, 15680, 15681-15683) become the test's free ports.

/** How the tests treat one documented command. */
export type Treatment =
  | { readonly run: 'broker' | 'cluster' }
  | { readonly ranBy: string }
  | { readonly help: true }
  | { readonly usage: true }
  | { readonly skip: string; readonly files?: readonly string[] };

export interface DocCommandRule {
  /** The command exactly as extracted, or a pattern matching the whole command. */
  readonly command: string | RegExp;
  readonly how: Treatment;
}

const README_TEST = 'test/cli/readme-commands.test.ts';
const RUN_BROKER = { run: 'broker' } as const;
const RUN_CLUSTER = { run: 'cluster' } as const;
const HELP = { help: true } as const;
const USAGE = { usage: true } as const;
const NEEDS_ROOT = 'changes the machine as root (a user, /etc, systemd): the install steps on real machines';

/** The rules, first match wins. */
export const DOC_COMMAND_RULES: readonly DocCommandRule[] = [
  // Program names in the prose: their --help runs.
  { command: /^styx (server|ctl|local-cluster)$/, how: HELP },
  {
    command: /^npx -y pnpm@10( styx( ctl)?)?( …)?$/,
    how: { skip: 'names pnpm or the styx script, no command' },
  },
  {
    command: /^styx ctl: no node is running in .*/,
    how: { skip: 'a message styx ctl prints (test/cli/styx-command.test.ts checks it), not a command' },
  },

  // README "Two commands", "Use it from TypeScript", "styx on the PATH".
  { command: 'npx -y pnpm@10 install && npx -y pnpm@10 start', how: { ranBy: README_TEST } },
  { command: 'npx -y pnpm@10 start', how: { ranBy: README_TEST } },
  { command: 'npx -y pnpm@10 start -- --port 5690 --log-level debug', how: { ranBy: README_TEST } },
  {
    command: 'npx -y pnpm@10 install',
    how: { skip: 'would rewrite the node_modules every other test runs on (they all run on its result)' },
  },
  { command: /^npx -y pnpm@10 test( test\/cli| test\/clients)?$/, how: { skip: 'the test suite itself' } },
  {
    command:
      /^sudo apt-get install (chromium|dnsmasq|openssl|python3-pika|librabbitmq-client-java|default-jdk-headless)$/,
    how: { ranBy: README_TEST },
  },
  { command: 'systemd-analyze verify', how: { ranBy: 'test/cli/deploy-files.test.ts' } },
  { command: 'npx -y pnpm@10 exec node example.ts', how: { ranBy: README_TEST } },
  {
    command: 'npx -y pnpm@10 --filter @styx/client pack --pack-destination /tmp',
    how: { ranBy: README_TEST },
  },
  { command: 'npm install /tmp/styx-client-0.1.0.tgz', how: { ranBy: README_TEST } },
  { command: 'node example.mjs', how: { ranBy: README_TEST } },
  {
    command: 'npx -y pnpm@10 build',
    how: {
      skip: 'tsc -b over every package (minutes on 2 cores) writing the dist/ the pack test reads; the pack command builds the SDK',
      files: ['tsconfig.json'],
    },
  },
  { command: 'npm install -g .', how: RUN_BROKER },
  { command: 'npm uninstall -g styx', how: RUN_BROKER },

  // Servers and their config files.
  { command: 'styx server --config /etc/styx/styx.conf', how: RUN_BROKER },
  { command: /^styx server --(config|cluster-listen)( HOST:PORT| FILE)?$/, how: USAGE },
  { command: 'styx server --metrics-auth', how: HELP },
  { command: /^styx (backup --config FILE --to DIR|ctl --data-dir DIR|ctl --config FILE)$/, how: USAGE },
  { command: 'styx ctl --config /etc/styx/styx.conf cluster_status', how: RUN_BROKER },

  // styx ctl on one node.
  { command: /^npx -y pnpm@10 styx ctl (set_policy|list_queues name messages) .*/, how: RUN_BROKER },
  { command: /^styx ctl (alarms|list_redrives|status|list_connections)$/, how: RUN_BROKER },
  {
    command: /^npx -y pnpm@10 styx ctl (list_connections|list_channels|close_connection|status)\b.*/,
    how: RUN_BROKER,
  },
  { command: /^styx ctl (check_queue|drain)$/, how: HELP },
  { command: /^styx ctl (<command> --help|explain_dead_lettering( \[-p VHOST\])? QUEUE)$/, how: USAGE },
  {
    command:
      /^(curl -u guest:guest|styx ctl (explain_dead_lettering orders\.new|redrive orders\.dlq|list_redrives #|cancel_redrive ID)).*/,
    how: { ranBy: README_TEST },
  },

  // Backup and restore.
  { command: 'cp -a /var/lib/styx /backup/styx-$(date +%F)', how: RUN_BROKER },
  { command: 'styx backup --config /etc/styx/styx.conf --to /backup/styx-$(date +%F)', how: RUN_BROKER },
  {
    command: 'rm -rf /var/lib/styx && cp -a /backup/styx-… /var/lib/styx && chown -R styx:styx /var/lib/styx',
    how: {
      skip: `${NEEDS_ROOT}; test/cli/backup.test.ts restores a copy and starts a node on it`,
      files: ['test/cli/backup.test.ts'],
    },
  },

  // Installing on three machines.
  { command: /^useradd .* styx$/, how: { skip: NEEDS_ROOT } },
  { command: /^head -c 32 \/dev\/urandom .*/, how: RUN_BROKER },
  { command: /^chown styx:styx .*/, how: { skip: NEEDS_ROOT } },
  {
    command: /^cp \/opt\/styx\/deploy\/systemd\/styx\.service .*/,
    how: {
      skip: `${NEEDS_ROOT}; test/cli/deploy-files.test.ts verifies the unit`,
      files: ['deploy/systemd/styx.service'],
    },
  },
  {
    command: /^(systemctl (restart|status) styx|journalctl -u styx)$/,
    how: { skip: 'needs the systemd unit installed (root)' },
  },

  // The local cluster, replicas, maintenance, feature flags.
  { command: 'npx -y pnpm@10 start:cluster', how: RUN_CLUSTER },
  { command: 'npx -y pnpm@10 styx ctl cluster_status --node http://127.0.0.1:15682', how: RUN_CLUSTER },
  { command: /^kill -9 \$\(node -p .*/, how: RUN_CLUSTER },
  { command: 'kill -HUP PID', how: RUN_CLUSTER },
  {
    command: /^kill -(9|HUP)$/,
    how: { skip: 'a fragment of the sentence around `kill -9 $(node -p …)` and `kill -HUP PID`, which run' },
  },
  {
    command:
      /^styx ctl (cluster_status|check_queues|rebalance|quorum_status orders|add_member orders styx-3|delete_member orders styx-3|shrink styx-3|grow styx-4 all --queue-pattern '\^orders'|list_queues name leader members online under_replicated)$/,
    how: RUN_CLUSTER,
  },
  {
    command:
      /^npx -y pnpm@10 styx ctl (check_if_node_is_quorum_critical|drain|revive|await_online_quorum_plus_one|list_feature_flags|enable_feature_flag) .*/,
    how: RUN_CLUSTER,
  },
  { command: /^styx ctl (forget_cluster_node|grow) NAME( all)?$/, how: USAGE },

  // Benchmarks, chaos, the Raft simulator: the runs take minutes to hours.
  // A bench script's synopsis (placeholders in brackets): its --help names every flag shown.
  { command: /^npx -y pnpm@10 exec node bench\/src\/[a-z-]+\.ts( \[[^\]]+\])+$/, how: USAGE },
  { command: /^npx -y pnpm@10 exec node bench\/(src|raft)\/[a-z-]+\.ts( .*)?$/, how: HELP },
  {
    command:
      /^npx -y pnpm@10 bench( (g --full )?--target both| --full| o --full| hot-expiry| --json out\.json| --list)?( #.*)?$/,
    how: HELP,
  },
  { command: 'npx -y pnpm@10 bench --target styx|styx-amqp|rabbitmq|both|all', how: USAGE },
  // Failover (o) of more queues than its default (bench/README "Sizes").
  { command: /^npx -y pnpm@10 bench o --queues \d+ --target styx$/, how: HELP },
  // The AMQP column beside the SDK one (and RabbitMQ's): named cases, all targets or a comma list.
  {
    command: /^npx -y pnpm@10 bench (a|g\.a)( [a-z][a-z.-]*)* --target (styx,styx-amqp|all)( #.*)?$/,
    how: HELP,
  },
  // The named runs (scaling sweeps, extras, leads): minutes each against both brokers.
  {
    command: /^npx -y pnpm@10 bench (scaling|extras|leads|leads soak|restart soak idle-queues)( #.*)?$/,
    how: HELP,
  },
  {
    command: /^bash bench\/scripts\/rabbitmq\.sh install( #.*)?$/,
    how: { skip: 'installs rabbitmq-server with apt-get (root)', files: ['bench/scripts/rabbitmq.sh'] },
  },
  { command: /^npx -y pnpm@10 chaos (\[|--break NAME|--check test\/chaos\/results\/<run>).*/, how: USAGE },
  { command: /^npx -y pnpm@10 chaos --(workload backlog|help).*/, how: HELP },
  {
    command: /^npx -y pnpm@10 (--filter @styx\/raft sim --seeds 2000 --steps 5000|raft:sweep)( .*)?$/,
    how: HELP,
  },
  // README "TLS" and the operations guide's TLS section (test/integration/tls.test.ts runs them
  // with a throwaway CA; here the parser takes every flag shown).
  { command: /^styx server --tls-cert \/etc\/styx\/tls\/cert\.pem .*# TLS only$/, how: HELP },
  {
    command: /^styx ctl --(node https:\/\/HOST:15681 --cacert ca\.pem|cacert \/etc\/styx\/tls\/ca\.pem)$/,
    how: USAGE,
  },
  { command: 'styx ctl --config /etc/styx/styx.conf …', how: USAGE },
  { command: 'systemctl kill -s HUP styx', how: { skip: NEEDS_ROOT } },
  {
    command: 'npx -y pnpm@10 --filter @styx/node gen:amqp',
    how: {
      skip: 'rewrites spec.gen.ts; the codec tests fail when the checked-in module differs from what the generator writes',
      files: ['packages/node/scripts/gen-amqp091.ts'],
    },
  },
];

/** The first rule matching `command`, or undefined. */
export function ruleFor(command: string): DocCommandRule | undefined {
  return DOC_COMMAND_RULES.find((rule) =>
    typeof rule.command === 'string' ? rule.command === command : fullMatch(rule.command, command),
  );
}

function fullMatch(pattern: RegExp, text: string): boolean {
  const m = pattern.exec(text);
  return m !== null && m.index === 0 && m[0].length === text.length;
}
