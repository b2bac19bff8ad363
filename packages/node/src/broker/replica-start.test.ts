import { describe, expect, it } from 'vitest';
import { queueRecord as record } from '../test-support/queue-record.ts';
import { replicaStart } from './replica-start.ts';

describe('replicaStart', () => {
  it('a founder starts with every founder as a voter, wherever it stands in the members now', () => {
    const founded = record({ members: ['b', 'c'], founders: ['a', 'b', 'c'] });
    expect(replicaStart(founded, ['b', 'c'], 'b')).toEqual({ founders: ['a', 'b', 'c'] });
    expect(replicaStart(founded, ['b', 'c'], 'c')).toEqual({ founders: ['a', 'b', 'c'] });
  });

  it('a member that is no founder joins, even as the first member', () => {
    const founded = record({ members: ['d', 'a'], founders: ['a', 'b', 'c'] });
    expect(replicaStart(founded, ['d', 'a'], 'd')).toBe('join');
  });

  it('without founders, the first member bootstraps alone and the others join', () => {
    const plain = record({ members: ['a', 'b', 'c'] });
    expect(replicaStart(plain, ['a', 'b', 'c'], 'a')).toBe('bootstrap');
    expect(replicaStart(plain, ['a', 'b', 'c'], 'b')).toBe('join');
  });
});
