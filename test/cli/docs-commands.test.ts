// Every shell command the README, docs/operations.md, docs/clients.md, bench/README.md and test/chaos/README.md show
// is classified in docs-commands-table.ts, and this file does what the table says for the commands
// that need no broker: `help` ones run with `--help` (the program exists and its parser takes every
// flag and value shown), `usage` synopses have every flag named in their program's help, and `skip`
// ones name files that exist. A command added to the docs without a rule fails here, and so does a
// rule no command matches. The `run` groups are docs-commands-broker.test.ts and
// docs-commands-cluster.test.ts; `ranBy` names the test file that runs it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';
import type { DocCommand } from '../support/doc-commands.ts';
import { extractCommands, readDocCommands } from '../support/doc-commands.ts';
import type { ShellRun } from '../support/reader-shell.ts';
import { readerEnv, runInShell } from '../support/reader-shell.ts';
import type { DocCommandRule } from './docs-commands-table.ts';
import { DOC_COMMAND_RULES, ruleFor } from './docs-commands-table.ts';

/** How many `--help` runs at once: each is an npx → pnpm → Node start on a shared 2-core machine. */
const CONCURRENCY = 3;

const commands = await readDocCommands(REPO_ROOT);

/** The commands classified `kind`, deduplicated, in document order. */
function commandsWith(
  kind: 'help' | 'usage' | 'skip' | 'ranBy',
): { command: string; rule: DocCommandRule }[] {
  const seen = new Map<string, DocCommandRule>();
  for (const c of commands) {
    const rule = ruleFor(c.command);
    if (rule !== undefined && kind in rule.how && !seen.has(c.command)) seen.set(c.command, rule);
  }
  return [...seen].map(([command, rule]) => ({ command, rule }));
}

const sh = (line: string): Promise<ShellRun> =>
  runInShell(line, REPO_ROOT, readerEnv([join(REPO_ROOT, 'bin')]));

/** Runs `work` over `items`, at most CONCURRENCY at a time. */
async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return results;
}

/** The command without a trailing `# comment` and without `[...]` ("and so on"). */
export function withoutRemarks(command: string): string {
  return command
    .replace(/\s+#\s.*$/, '')
    .replaceAll(' [...]', '')
    .trim();
}

/**
 * A synopsis' program (the words before its first option, placeholder or bracket) and the flags it
 * shows: `npx -y pnpm@10 chaos [--nodes 3|5] [--seed S]` → `npx -y pnpm@10 chaos`, --nodes, --seed.
 * The `-y` of `npx -y` and `@10` belong to the program.
 */
export function synopsis(command: string): { program: string; flags: string[] } {
  const words = withoutRemarks(command).split(' ');
  const program: string[] = [];
  for (const word of words) {
    const isProgramFlag = word === '-y' && program.at(-1) === 'npx';
    if (!isProgramFlag && (/^[[<-]/.test(word) || /^[A-Z][A-Z_:]*$/.test(word) || word.includes('|'))) break;
    program.push(word);
  }
  const rest = words.slice(program.length).join(' ');
  const flags = [...rest.matchAll(/(?:^|[\s[])(--?[a-z][a-z-]*)/g)].map((m) => m[1] as string);
  return { program: program.join(' '), flags };
}

describe('the documents’ commands are extracted', () => {
  it('from shell blocks (comments and blank lines out, wrapped lines joined) and inline spans starting with a program', () => {
    const md = [
      'Run `styx ctl list_queues name` or `npx -y pnpm@10',
      'start` here; `rabbitmqctl list_queues` and `styx` are not commands.',
      '```sh',
      '# a comment',
      'styx ctl status   # the node',
      'npx -y pnpm@10 chaos [--nodes 3]',
      '                     [--overlap]',
      'curl -u guest:guest \\',
      '  http://127.0.0.1:15680/api/overview',
      '```',
      '```',
      'styx server [--port PORT]',
      '```',
      '```console',
      '$ styx --version',
      '```',
    ].join('\n');
    expect(extractCommands('x.md', md)).toEqual([
      { file: 'x.md', line: 1, command: 'styx ctl list_queues name', where: 'inline' },
      { file: 'x.md', line: 1, command: 'npx -y pnpm@10 start', where: 'inline' },
      { file: 'x.md', line: 5, command: 'styx ctl status # the node', where: 'block' },
      { file: 'x.md', line: 6, command: 'npx -y pnpm@10 chaos [--nodes 3] [--overlap]', where: 'block' },
      {
        file: 'x.md',
        line: 8,
        command: 'curl -u guest:guest http://127.0.0.1:15680/api/overview',
        where: 'block',
      },
      { file: 'x.md', line: 15, command: 'styx --version', where: 'block' },
    ]);
  });

  it('finds the commands of every document (a sanity floor, so a broken extractor cannot pass as "nothing to check")', () => {
    const count = (file: string) => commands.filter((c: DocCommand) => c.file === file).length;
    expect(count('README.md')).toBeGreaterThan(40);
    expect(count('docs/operations.md')).toBeGreaterThan(30);
    expect(count('bench/README.md')).toBeGreaterThan(5);
    expect(count('test/chaos/README.md')).toBeGreaterThan(4);
  });
});

describe('every documented command is classified', () => {
  it('each matches a rule of docs-commands-table.ts (a new command in the docs needs one)', () => {
    const unclassified = commands.filter((c) => ruleFor(c.command) === undefined);
    expect(
      unclassified.map((c) => `${c.file}:${c.line}: ${c.command}`),
      'add a rule for each to test/cli/docs-commands-table.ts',
    ).toEqual([]);
  });

  it('a command no rule names is unclassified (how a new command in the docs fails the test above)', () => {
    expect(ruleFor('styx ctl frobnicate orders')).toBeUndefined();
    expect(ruleFor('npx -y pnpm@10 chaos --minutes 2 --nodes 3')).toBeUndefined();
    expect(ruleFor('npx -y pnpm@10 chaos --help')?.how).toEqual({ help: true });
  });

  it('each rule matches some command (no rules for commands the docs no longer show)', () => {
    const used = new Set(commands.map((c) => ruleFor(c.command)));
    expect(DOC_COMMAND_RULES.filter((rule) => !used.has(rule)).map((rule) => String(rule.command))).toEqual(
      [],
    );
  });

  it('a `ranBy` test file exists and a `skip` names its reason and files that exist', () => {
    for (const { command, rule } of commandsWith('ranBy')) {
      const test = (rule.how as { ranBy: string }).ranBy;
      expect(existsSync(join(REPO_ROOT, test)), `${command}: ${test}`).toBe(true);
    }
    for (const { command, rule } of commandsWith('skip')) {
      const how = rule.how as { skip: string; files?: readonly string[] };
      expect(how.skip.length, command).toBeGreaterThan(10);
      for (const file of how.files ?? [])
        expect(existsSync(join(REPO_ROOT, file)), `${command}: ${file}`).toBe(true);
    }
  });
});

describe('commands too long or too heavy to run', () => {
  it(
    'run as written with --help: the program takes every flag and value shown',
    { timeout: 240_000 },
    async () => {
      const help = commandsWith('help');
      expect(help.length).toBeGreaterThan(15);
      const runs = await inTurns(help, async ({ command }) => {
        const line = `${withoutRemarks(command)} --help`;
        const ran = await sh(line);
        return { line, code: ran.code, said: ran.code === 0 ? '' : ran.stdout + ran.stderr };
      });
      expect(runs.filter((r) => r.code !== 0)).toEqual([]);
    },
  );

  it('synopses: the program’s --help names every flag they show', { timeout: 120_000 }, async () => {
    const usage = commandsWith('usage');
    expect(usage.length).toBeGreaterThan(8);
    const programs = [...new Set(usage.map(({ command }) => synopsis(command).program))];
    const helps = new Map(
      (await inTurns(programs, (program) => sh(`${program} --help`))).map((ran, i) => [programs[i], ran]),
    );
    const runs = usage.map(({ command }) => {
      const { program, flags } = synopsis(command);
      const ran = helps.get(program) as ShellRun;
      const text = ran.stdout + ran.stderr;
      return { command, program, code: ran.code, missing: flags.filter((flag) => !text.includes(flag)) };
    });
    expect(runs.filter((r) => r.code !== 0 || r.missing.length > 0)).toEqual([]);
  });

  it('reads a synopsis as its program and flags', () => {
    expect(synopsis('npx -y pnpm@10 chaos [--nodes 3|5] [--minutes N] [--overlap] [--break NAME]')).toEqual({
      program: 'npx -y pnpm@10 chaos',
      flags: ['--nodes', '--minutes', '--overlap', '--break'],
    });
    expect(synopsis('styx ctl explain_dead_lettering [-p VHOST] QUEUE')).toEqual({
      program: 'styx ctl explain_dead_lettering',
      flags: ['-p'],
    });
    expect(synopsis('styx ctl grow NAME all')).toEqual({ program: 'styx ctl grow', flags: [] });
    expect(synopsis('npx -y pnpm@10 bench --target styx|rabbitmq|both')).toEqual({
      program: 'npx -y pnpm@10 bench',
      flags: ['--target'],
    });
  });
});
