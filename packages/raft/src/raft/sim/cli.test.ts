import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));

function sim(...args: string[]): { status: number | null; lines: string[] } {
  const result = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, lines: result.stdout.trim().split('\n') };
}

describe('sim CLI', () => {
  it('ends with one summary line of totals ending in "violations: 0", exit code 0', () => {
    const { status, lines } = sim('--seeds', '6', '--start', '10', '--steps', '800', '--workers', '2');
    expect(status).toBe(0);
    expect(lines).toHaveLength(1);
    const summary = lines[0] ?? '';
    for (const total of [
      'elections',
      'crashes',
      'partitions',
      'snapshots installed',
      'membership changes',
      'commits',
    ]) {
      expect(summary).toContain(total);
    }
    expect(summary).toMatch(/violations: 0$/);
  });

  it('prints a failing seed with its replay command and exits non-zero', () => {
    const { status, lines } = sim(
      '--seeds',
      '1',
      '--start',
      '1',
      '--steps',
      '500',
      '--mutation',
      'replyBeforePersist',
    );
    expect(status).toBe(1);
    expect(lines[0]).toMatch(/^FAIL seed 1: /);
    expect(lines[1]).toContain('replay: pnpm --filter @styx/raft sim --seeds 1 --start 1 --steps 500');
    expect(lines.at(-1)).toMatch(/violations: [1-9]\d*$/);
  });

  it('takes the `--` pnpm hands on (npx -y pnpm@10 raft:sweep -- --start S)', () => {
    const { status, lines } = sim(
      '--seeds',
      '100000',
      '--',
      '--seeds',
      '2',
      '--start',
      '7',
      '--steps',
      '300',
    );
    expect(status).toBe(0);
    expect(lines.at(-1)).toMatch(/^sim: 2 seeds x 300 steps .*violations: 0$/);
  });

  it('refuses bad arguments', () => {
    expect(sim('--seeds', '0').status).toBe(2);
    expect(sim('--mutation', 'nope').status).toBe(2);
  });
});
