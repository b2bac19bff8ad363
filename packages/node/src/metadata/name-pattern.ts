/**
 * Regular expressions that users give the node to match names against: the management API's
 * `?name=…&use_regex=true` list filter, policy patterns, permission regexes, `grow`'s queue and
 * vhost patterns. They run on a linear-time engine (re2js, a pure-JavaScript port of RE2), never on
 * V8's backtracking `RegExp`: with a backtracking engine one pattern such as `(a+)+$` against a
 * 30-character name costs 2^30 steps and blocks the event loop, so Raft heartbeats stop and the
 * node loses its leaderships. RE2's cost is bounded by (pattern length × name length), a few
 * microseconds for a queue name, whatever the pattern.
 *
 * The syntax is RE2's, which covers what policy and permission patterns use in practice (and
 * PCRE's, RabbitMQ's engine, for that common part): literals and escapes (`\.`, `\d`, `\w`, `\s`),
 * `.`, classes `[a-z]` `[^…]` `[[:alpha:]]`, anchors `^` `$` `\b`, groups `(…)` `(?:…)` `(?<n>…)`,
 * alternation `|`, repetition `* + ? {n} {n,} {n,m}` (lazy forms too; a count is at most 1000),
 * inline flags `(?i)`. Not supported, refused with a clear error: backreferences (`\1`) and
 * lookaround (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) — the constructs that need backtracking.
 * Matching is unanchored, as RabbitMQ's `re:run` and JavaScript's `test`: 'foo' matches 'a-foo-b'.
 */
import { RE2JS } from 're2js';
import type { MetadataCommand } from './types.ts';

/** A pattern that the linear-time engine cannot compile (bad or unsupported syntax). */
export class NamePatternError extends Error {
  readonly code = 'NAME_PATTERN_INVALID';
  readonly pattern: string;
  /** What is wrong, without the pattern: "missing closing ): `(`". */
  readonly reason: string;
  constructor(pattern: string, reason: string) {
    super(`'${pattern}' is not a valid regular expression: ${reason}`);
    this.name = 'NamePatternError';
    this.pattern = pattern;
    this.reason = reason;
  }
}

/** A compiled name pattern: `test` is stateless (no `lastIndex`) and linear in the name's length. */
export class NamePattern {
  readonly source: string;
  private readonly compiled: RE2JS;

  private constructor(source: string, compiled: RE2JS) {
    this.source = source;
    this.compiled = compiled;
  }

  /**
   * `source` compiled; `ignoreCase` as JavaScript's `i` flag. JavaScript spellings that RE2 writes
   * differently (`\/`, `(?<name>…)`, `\u0041`) are translated first, so a pattern written for
   * JavaScript's RegExp means the same here. Throws NamePatternError.
   */
  static compile(source: string, ignoreCase = false): NamePattern {
    try {
      const translated = RE2JS.translateRegExp(source);
      return new NamePattern(source, RE2JS.compile(translated, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0));
    } catch (error) {
      const reason =
        error instanceof Error ? error.message.replace(/^error parsing regexp: /, '') : String(error);
      throw new NamePatternError(source, reason);
    }
  }

  /** Whether the pattern matches anywhere in `name`. */
  test(name: string): boolean {
    return this.compiled.test(name);
  }
}

/** Why `source` cannot be compiled, or undefined when it can (for validation messages). */
export function namePatternProblem(source: string): NamePatternError | undefined {
  try {
    NamePattern.compile(source);
    return undefined;
  } catch (error) {
    if (error instanceof NamePatternError) return error;
    throw error;
  }
}

/**
 * The refusal text for a command whose patterns the linear-time engine cannot compile (a policy's
 * `pattern`, a permission's three regexes), or undefined. Checked before a command is proposed,
 * not in the metadata machine: a machine that refused what an older version accepted would apply
 * the same log differently on the two versions during a rolling upgrade.
 */
export function commandPatternProblem(command: MetadataCommand): string | undefined {
  if (command.type === 'setPolicy') {
    const problem = namePatternProblem(command.pattern);
    return problem === undefined ? undefined : `Validation failed: pattern ${problem.message}`;
  }
  if (command.type === 'setPermissions') {
    for (const kind of ['configure', 'write', 'read'] as const) {
      const problem = namePatternProblem(command[kind]);
      if (problem !== undefined)
        return `invalid ${kind} regular expression '${problem.pattern}': ${problem.reason}`;
    }
  }
  return undefined;
}
