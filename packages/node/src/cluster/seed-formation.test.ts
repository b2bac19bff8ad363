import { describe, expect, it } from 'vitest';
import type { SeedAnswer } from './seed-formation.ts';
import { decideSeeds, isOwnAddress } from './seed-formation.ts';

const A = '10.0.0.1:25680';
const B = '10.0.0.2:25680';
const C = '10.0.0.3:25680';
const answers = (entries: Record<string, SeedAnswer>) => new Map(Object.entries(entries));

describe('decideSeeds', () => {
  it('joins through the listed nodes that are members already, whoever sorts first', () => {
    expect(decideSeeds([A, B, C], A, answers({ [B]: 'not-clustered', [C]: 'clustered' }))).toEqual({
      action: 'join',
      through: [C],
    });
    expect(decideSeeds([A, B], undefined, answers({ [A]: 'clustered', [B]: 'no-answer' }))).toEqual({
      action: 'join',
      through: [A],
    });
  });

  it('forms only when every other listed node answered "not clustered" and its address sorts first', () => {
    expect(decideSeeds([A, B, C], A, answers({ [B]: 'not-clustered', [C]: 'not-clustered' }))).toEqual({
      action: 'form',
    });
    expect(decideSeeds([A], A, answers({}))).toEqual({ action: 'form' });
    expect(decideSeeds([A, B, C], B, answers({ [A]: 'not-clustered', [C]: 'not-clustered' }))).toMatchObject({
      action: 'wait',
      reason: `${A} forms the cluster (its address sorts first); waiting for it`,
    });
  });

  it('waits while a listed node does not answer (it may be a member), or when DNS does not list it', () => {
    expect(decideSeeds([A, B, C], A, answers({ [B]: 'not-clustered', [C]: 'no-answer' }))).toMatchObject({
      action: 'wait',
      reason: `no answer yet from ${C} (one may be a member)`,
    });
    expect(
      decideSeeds([B, C], undefined, answers({ [B]: 'not-clustered', [C]: 'not-clustered' })),
    ).toMatchObject({ action: 'wait' });
    expect(decideSeeds([], undefined, answers({}))).toEqual({ action: 'wait', reason: 'DNS lists no node' });
  });
});

describe('isOwnAddress', () => {
  const hosts = new Set(['127.0.0.1', '10.0.0.2', 'fd00::2']);
  it('is this node: its cluster port on one of its addresses', () => {
    expect(isOwnAddress(B, 25680, hosts)).toBe(true);
    expect(isOwnAddress('[fd00::2]:25680', 25680, hosts)).toBe(true);
    expect(isOwnAddress(A, 25680, hosts)).toBe(false);
    expect(isOwnAddress('127.0.0.1:25681', 25680, hosts)).toBe(false);
  });
});
