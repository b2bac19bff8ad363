// The files shipped for running Styx as a service (deploy/): the systemd unit parses with
// `systemd-analyze verify` (no warning: systemd ignores an unknown key or a bad value with a warning
// only, so any output fails), its ExecStart runs the repository's launcher with options `styx
// server` accepts (the example styx.conf it reads: server-config.test.ts).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';

const UNIT = join(REPO_ROOT, 'deploy', 'systemd', 'styx.service');
/** Where the unit expects the repository (docs/operations.md, "Installing on three machines"). */
const INSTALL_DIR = '/opt/styx';
const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';

/** The unit's `Key=value` lines of [Service] (the last value of a key). */
async function serviceSettings(): Promise<Map<string, string>> {
  const text = await readFile(UNIT, 'utf8');
  const service = /^\[Service\]\n([\s\S]*?)(?=^\[)/m.exec(text)?.[1] ?? '';
  const settings = new Map<string, string>();
  for (const line of service.split('\n')) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match !== null) settings.set(match[1] as string, match[2] as string);
  }
  return settings;
}

describe('deploy/systemd/styx.service', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  /** `systemd-analyze verify` of the unit with /opt/styx pointing at this checkout. */
  async function verify(
    edit: (unit: string) => string = (unit) => unit,
  ): Promise<{ status: number | null; output: string }> {
    const dir = await mkdtemp(join(tmpdir(), 'styx-unit-'));
    dirs.push(dir);
    const unit = edit((await readFile(UNIT, 'utf8')).replaceAll(INSTALL_DIR, REPO_ROOT));
    await writeFile(join(dir, 'styx.service'), unit);
    const result = spawnSync(SYSTEMD_ANALYZE, ['verify', join(dir, 'styx.service')], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  }

  it('parses with systemd-analyze verify, without a single warning', async () => {
    expect(existsSync(SYSTEMD_ANALYZE), `${SYSTEMD_ANALYZE} (Debian's systemd package) is needed`).toBe(true);
    expect(await verify()).toEqual({ status: 0, output: '' });
    // The check can fail: a mistyped key and a bad value are reported (still with status 0).
    const bad = await verify((unit) =>
      unit.replace('LimitNOFILE=65536', 'LimitNOFILE=lots\nRestartt=always'),
    );
    expect(bad.output).toMatch(/Failed to parse resource value[\s\S]*Unknown key 'Restartt'/);
  });

  it('runs the launcher with options styx server accepts, and stops and restarts as documented', async () => {
    const settings = await serviceSettings();
    const [command, ...args] = (settings.get('ExecStart') ?? '').split(' ');
    expect(command).toBe(`${INSTALL_DIR}/bin/styx`);
    accessSync(join(REPO_ROOT, 'bin', 'styx'), constants.X_OK);
    expect(args).toEqual(['server', '--config', '/etc/styx/styx.conf']);
    // deploy/styx.conf, the example of that file, is checked in server-config.test.ts.
    expect(settings.get('User')).toBe('styx');
    expect(settings.get('Restart')).toBe('on-failure');
    expect(settings.get('RestartPreventExitStatus')).toBe('2');
    expect(Number(settings.get('LimitNOFILE'))).toBeGreaterThanOrEqual(65_536);
    // A clean stop may take ~30 s (publishes confirmed, storage synced): twice that, at least.
    expect(Number(settings.get('TimeoutStopSec'))).toBeGreaterThanOrEqual(60);
    expect(settings.get('NoNewPrivileges')).toBe('yes');
    expect(settings.get('ProtectSystem')).toBe('strict');
    expect(settings.get('ReadWritePaths')).toBe('/var/lib/styx');
  });
});
