#!/usr/bin/env node
import { DataDirLockedError } from '../broker/data-dir.ts';
import { UsageError, withoutLeadingSeparator } from './args.ts';

const USAGE = `Usage: styx <command> [options]

Commands:
  server         run a broker node (styx server --help)
  ctl            manage a node, with rabbitmqctl's commands (styx ctl --help)
  local-cluster  run a cluster of nodes on this machine, on loopback (styx local-cluster --help)
  backup         copy a node's data dir consistently, running or stopped (styx backup --help)

Options:
  -h, --help     show this help
  --version      print the version`;

const VERSION = '0.1.0';

async function main(argv: string[]): Promise<number> {
  // `pnpm styx -- server …` hands its `--` on (see withoutLeadingSeparator).
  const [command, ...rest] = withoutLeadingSeparator(argv);
  switch (command) {
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    case '--version':
      process.stdout.write(`styx ${VERSION}\n`);
      return 0;
    case 'server': {
      // Loaded on demand: `styx ctl` should not pay for loading the whole broker.
      const { SERVER_USAGE, serverCommand } = await import('./server-command.ts');
      const { ConfigFileError } = await import('./server-config.ts');
      const { TlsConfigError } = await import('../transport/tls/tls-context.ts');
      try {
        return await serverCommand(rest);
      } catch (err) {
        if (err instanceof ConfigFileError || err instanceof TlsConfigError) {
          process.stderr.write(`styx server: ${err.message}\n`);
          return 2;
        }
        if (err instanceof UsageError) {
          process.stderr.write(`styx server: ${err.message}\n\n${SERVER_USAGE}\n`);
          return 2;
        }
        throw err;
      }
    }
    case 'local-cluster': {
      const { LOCAL_CLUSTER_USAGE, localClusterCommand } = await import('./local-cluster-command.ts');
      try {
        return await localClusterCommand(rest);
      } catch (err) {
        if (err instanceof UsageError) {
          process.stderr.write(`styx local-cluster: ${err.message}\n\n${LOCAL_CLUSTER_USAGE}\n`);
          return 2;
        }
        throw err;
      }
    }
    case 'backup': {
      const { BACKUP_USAGE, backupCommand } = await import('./backup-command.ts');
      const { ConfigFileError } = await import('./server-config.ts');
      try {
        return await backupCommand(rest);
      } catch (err) {
        if (err instanceof ConfigFileError) {
          process.stderr.write(`styx backup: ${err.message}\n`);
          return 2;
        }
        if (err instanceof UsageError) {
          process.stderr.write(`styx backup: ${err.message}\n\n${BACKUP_USAGE}\n`);
          return 2;
        }
        throw err;
      }
    }
    case 'ctl': {
      const { ctlCommand } = await import('./ctl-command.ts');
      return ctlCommand(rest);
    }
    default:
      process.stderr.write(`styx: unknown command '${command}'\n\n${USAGE}\n`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof DataDirLockedError) process.stderr.write(`styx: ${err.message}\n`);
    else process.stderr.write(`styx: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
