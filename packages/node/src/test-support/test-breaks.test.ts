import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseTestBreaks, TEST_BREAK_ENV, TEST_BREAKS } from './test-breaks.ts';

describe('parseTestBreaks', () => {
  it('is empty when the variable is unset or blank', () => {
    expect(parseTestBreaks(undefined).breaks.size).toBe(0);
    expect(parseTestBreaks(' , ').breaks.size).toBe(0);
  });

  it('takes a comma-separated list and sets unknown names apart', () => {
    const parsed = parseTestBreaks('reorder-deliveries, confirm-before-commit,confirm-never');
    expect([...parsed.breaks].sort()).toEqual(['confirm-before-commit', 'reorder-deliveries']);
    expect(parsed.unknown).toEqual(['confirm-never']);
  });

  it('knows every break it lists', () => {
    expect(parseTestBreaks(TEST_BREAKS.join(',')).unknown).toEqual([]);
  });
});

describe('styx server with STYX_TEST_BREAK', () => {
  it('refuses to start when the variable names no such break', () => {
    const cli = join(import.meta.dirname, '..', 'cli', 'main.ts');
    const result = spawnSync(process.execPath, [cli, 'server', '--data-dir', '/nonexistent/never-made'], {
      env: { ...process.env, [TEST_BREAK_ENV]: 'confirm-never' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('names no such break: confirm-never');
  });
});
