// The shell commands the documentation shows, read from the Markdown itself so that a test can run
// or check each of them (test/cli/docs-commands*.test.ts). Two places hold commands:
//
// - fenced blocks marked ```sh, ```bash or ```console: every line is a command, but a line starting
//   with `#` (a comment) or blank; a line ending in `\`, or an indented line after a command, continues
//   the command before it (the chaos synopsis wraps that way); a `$ ` prompt is dropped;
// - inline code spans in the prose that start with a program a reader would type (COMMAND_WORDS):
//   `styx ctl quorum_status orders`, `npx -y pnpm@10 start:cluster`, `cp -a /var/lib/styx …`. A span
//   that wraps over a line break is one command, its line break read as a space.
//
// Blocks without a language (usage synopses, config files, JSON shapes) are not commands.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One command as the documentation shows it, and where. */
export interface DocCommand {
  /** The file, relative to the repository's root. */
  readonly file: string;
  /** 1-based line of the command's first line. */
  readonly line: number;
  /** The command, whitespace runs collapsed to one space (a trailing `# comment` kept). */
  readonly command: string;
  readonly where: 'block' | 'inline';
}

/** The programs whose inline code spans are commands. */
export const COMMAND_WORDS: readonly string[] = [
  'npx',
  'pnpm',
  'npm',
  'node',
  'styx',
  'curl',
  'bash',
  'sudo',
  'systemctl',
  'systemd-analyze',
  'journalctl',
  'useradd',
  'head',
  'cp',
  'rm',
  'chown',
  'chmod',
  'kill',
];

/** The documents whose commands are extracted, relative to the repository's root. */
export const DOC_FILES: readonly string[] = [
  'README.md',
  'docs/operations.md',
  'docs/clients.md',
  'bench/README.md',
  'test/chaos/README.md',
];

const SHELL_FENCE = /^```(sh|bash|console)\s*$/;

function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The commands of one Markdown document, in the order they appear. */
export function extractCommands(file: string, markdown: string): DocCommand[] {
  const lines = markdown.split('\n');
  const found: DocCommand[] = [];
  let fence: 'shell' | 'other' | undefined;
  /** Whether this fence already holds a command (so a continuation line has one to continue). */
  let inFence = false;
  let prose: { text: string; line: number }[] = [];
  const flushProse = () => {
    found.push(...inlineCommands(file, prose));
    prose = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i] as string;
    if (fence === undefined) {
      if (text.startsWith('```')) {
        flushProse();
        fence = SHELL_FENCE.test(text) ? 'shell' : 'other';
        inFence = false;
      } else prose.push({ text, line: i + 1 });
      continue;
    }
    if (text.startsWith('```')) {
      fence = undefined;
      continue;
    }
    if (fence === 'other') continue;
    const body = text.replace(/^\$ /, '');
    if (body.trim() === '' || body.trim().startsWith('#')) continue;
    const previous = inFence ? found.at(-1) : undefined;
    if (previous !== undefined && isContinuation(lines, i)) {
      found[found.length - 1] = {
        ...previous,
        command: squash(`${previous.command.replace(/\\$/, '')} ${body}`),
      };
    } else found.push({ file, line: i + 1, command: squash(body), where: 'block' });
    inFence = true;
  }
  flushProse();
  return found;
}

/** Whether block line `i` continues the command above it (a `\` before it, or an indent). */
function isContinuation(lines: readonly string[], i: number): boolean {
  const above = lines[i - 1] ?? '';
  return above.trimEnd().endsWith('\\') || /^\s+\S/.test(lines[i] ?? '');
}

/** Inline code spans of a run of prose lines that start with a command word. */
function inlineCommands(file: string, prose: readonly { text: string; line: number }[]): DocCommand[] {
  const text = prose.map((p) => p.text).join('\n');
  const starts: number[] = [];
  let offset = 0;
  for (const p of prose) {
    starts.push(offset);
    offset += p.text.length + 1;
  }
  const lineAt = (index: number): number => {
    let k = 0;
    while (k + 1 < starts.length && (starts[k + 1] as number) <= index) k++;
    return prose[k]?.line ?? 0;
  };
  const found: DocCommand[] = [];
  // Single-backtick spans, which may wrap over one line break (never a blank line).
  for (const m of text.matchAll(/(?<!`)`([^`]+)`(?!`)/g)) {
    const span = m[1] as string;
    if (span.includes('\n\n')) continue;
    const command = squash(span);
    const word = command.split(' ')[0] as string;
    if (!COMMAND_WORDS.includes(word) || !command.includes(' ')) continue;
    found.push({ file, line: lineAt(m.index), command, where: 'inline' });
  }
  return found;
}

/** Every command of every file in DOC_FILES under `root`. */
export async function readDocCommands(root: string): Promise<DocCommand[]> {
  const all: DocCommand[] = [];
  for (const file of DOC_FILES) {
    all.push(...extractCommands(file, await readFile(join(root, file), 'utf8')));
  }
  return all;
}
