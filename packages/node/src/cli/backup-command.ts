/**
 * `styx backup`: a consistent copy of a node's data dir (storage/node-backup.ts), while the node
 * runs or stopped, into a directory that is itself a data dir: restoring is starting `styx server
 * --data-dir` on it (see docs/operations.md, "Backup and restore").
 */
import { resolve } from 'node:path';
import { BackupError, backupDataDir } from '../storage/node-backup.ts';
import { parse, UsageError } from './args.ts';
import { repeatableServerFlags } from './server-command.ts';
import { configValue, readServerConfig } from './server-config.ts';

export const BACKUP_USAGE = `Usage: styx backup (--data-dir DIR | --config FILE) --to DIR [--compact]

Copy a node's data dir consistently, while the node runs or after it stopped: every durable queue,
message and the metadata (LMDB's own copy of one snapshot), with the node's identity key, name and
created cluster secret. The copy is a data dir: restore by starting styx server --data-dir on it
(or on a copy of it) on a stopped or new machine.

Options:
  --data-dir DIR   the node's data dir
  --config FILE    the node's styx.conf: its data_dir (default ./styx-data, as styx server's)
  --to DIR         where the copy goes: a new or empty directory
  --compact        leave LMDB's free pages out (slower, smaller)
  -h, --help       show this help

Exit codes: 0 copied, 1 not copied (no data dir there, a target that is not empty, an I/O
error), 2 bad usage.`;

const BACKUP_FLAGS = {
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  to: { type: 'string' },
  compact: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Run `styx backup ARGV`; returns the exit code. Throws UsageError (exit 2). */
export async function backupCommand(argv: readonly string[]): Promise<number> {
  const { values } = parse(argv, BACKUP_FLAGS);
  if (values.help === true) {
    process.stdout.write(`${BACKUP_USAGE}\n`);
    return 0;
  }
  if (values.to === undefined || values.to === '') throw new UsageError('--to DIR is required');
  if (values['data-dir'] !== undefined && values.config !== undefined) {
    throw new UsageError('give --data-dir or --config, not both');
  }
  let dataDir = values['data-dir'];
  if (dataDir === undefined && values.config !== undefined) {
    // Only data_dir is read; the file's other keys are checked as styx server checks them.
    const config = await readServerConfig(resolve(values.config), repeatableServerFlags());
    dataDir = configValue(config, 'data_dir') ?? 'styx-data';
  }
  if (dataDir === undefined) throw new UsageError('give the node with --data-dir DIR or --config FILE');
  const target = resolve(values.to);
  try {
    const result = await backupDataDir(resolve(dataDir), target, values.compact === true);
    process.stdout.write(
      `backed up ${resolve(dataDir)} to ${target} (data.mdb ${result.bytes} bytes; ${result.files.join(', ')})\n`,
    );
    return 0;
  } catch (error) {
    if (!(error instanceof BackupError)) throw error;
    process.stderr.write(`styx backup: ${error.message}\n`);
    return 1;
  }
}
