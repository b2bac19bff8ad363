import { describe, expect, it } from 'vitest';
import { commandPatternProblem, NamePattern, NamePatternError, namePatternProblem } from './name-pattern.ts';

describe('name patterns (the linear-time engine)', () => {
  it("keeps RabbitMQ's common regex syntax: unanchored, anchors, classes, groups, repetition", () => {
    const cases: [string, string, boolean][] = [
      ['foo', 'a-foo-b', true],
      ['^amq\\.', 'amq.direct', true],
      ['^amq\\.', 'x.amq.direct', false],
      ['^(orders|billing)\\.[a-z]+$', 'billing.eu', true],
      ['^q\\d{2,3}$', 'q123', true],
      ['^q\\d{2,3}$', 'q1234', false],
      ['.*', '', true],
      ['^[^.]+$', 'has.dot', false],
      ['a/b', 'a/b', true],
      ['(?<zone>eu|us)-', 'eu-west', true],
      ['\\bdl\\b', 'orders.dl.1', true],
      ['[[:digit:]]+', 'q7', true],
    ];
    for (const [pattern, name, expected] of cases) {
      expect(NamePattern.compile(pattern).test(name), `${pattern} on ${name}`).toBe(expected);
    }
    expect(NamePattern.compile('ORDERS', true).test('orders.eu')).toBe(true);
    expect(NamePattern.compile('ORDERS').test('orders.eu')).toBe(false);
  });

  it('runs a catastrophic pattern in time linear in the name', () => {
    const pattern = NamePattern.compile('(a+)+$');
    // A backtracking engine takes 2^30 steps (minutes) for each of these names; this one, microseconds.
    for (let i = 0; i < 1_000; i++) expect(pattern.test(`${'a'.repeat(30)}!`)).toBe(false);
    expect(pattern.test('aaa')).toBe(true);
  });

  it('refuses backreferences and lookaround, and bad syntax, with the reason', () => {
    for (const bad of ['(a)\\1', '(?=a)b', '(?!a)b', '(', 'a{2,1}']) {
      expect(() => NamePattern.compile(bad)).toThrow(NamePatternError);
      expect(namePatternProblem(bad)?.message).toMatch(/is not a valid regular expression: /);
    }
    expect(namePatternProblem('^ok$')).toBeUndefined();
  });

  it('checks the patterns of policy and permission commands before they are proposed', () => {
    expect(
      commandPatternProblem({
        type: 'setPolicy',
        vhost: '/',
        name: 'p',
        pattern: '(?=x)',
        applyTo: 'all',
        priority: 0,
        definition: {},
      }),
    ).toMatch(/^Validation failed: pattern '\(\?=x\)' is not a valid regular expression/);
    expect(
      commandPatternProblem({
        type: 'setPermissions',
        user: 'u',
        vhost: '/',
        configure: '',
        write: '.*',
        read: '(a)\\1',
      }),
    ).toMatch(/^invalid read regular expression '\(a\)\\1': /);
    expect(commandPatternProblem({ type: 'addVhost', name: 'v' })).toBeUndefined();
  });
});
