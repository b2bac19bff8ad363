import { describe, expect, it } from 'vitest';
import type { Frame } from '../wire/index.ts';
import { frame } from '../wire/index.ts';
import type { PendingRpc } from './rpc-queue.ts';
import { RpcQueue } from './rpc-queue.ts';

function rpc(method: PendingRpc['method'], expect: PendingRpc['expect'], log: string[]): PendingRpc {
  return {
    method,
    expect,
    resolve: (f) => log.push(`${method} ← ${f.method}`),
    reject: (err) => log.push(`${method} ✗ ${err.message}`),
  };
}

const ok = (m: 'queueDeclareOk' | 'queueBindOk' | 'basicGetEmpty'): Frame =>
  m === 'queueDeclareOk'
    ? frame(1, m, { queue: 'q', messageCount: 0, consumerCount: 0 })
    : frame(1, m, {} as Record<string, never>);

describe('RpcQueue', () => {
  it('matches replies to requests in FIFO order', () => {
    const log: string[] = [];
    const q = new RpcQueue();
    q.push(rpc('queueDeclare', ['queueDeclareOk'], log));
    q.push(rpc('queueBind', ['queueBindOk'], log));
    q.push(rpc('basicGet', ['basicGetOk', 'basicGetEmpty'], log));
    expect(q.size).toBe(3);
    for (const m of ['queueDeclareOk', 'queueBindOk', 'basicGetEmpty'] as const) {
      const taken = q.take(ok(m));
      expect(taken.kind).toBe('matched');
      if (taken.kind === 'matched') taken.rpc.resolve(ok(m));
    }
    expect(log).toEqual([
      'queueDeclare ← queueDeclareOk',
      'queueBind ← queueBindOk',
      'basicGet ← basicGetEmpty',
    ]);
    expect(q.size).toBe(0);
  });

  it('reports a reply that does not answer the oldest request, and one with nothing outstanding', () => {
    const log: string[] = [];
    const q = new RpcQueue();
    q.push(rpc('queueDeclare', ['queueDeclareOk'], log));
    expect(q.take(ok('queueBindOk')).kind).toBe('unexpected');
    expect(q.take(ok('queueBindOk')).kind).toBe('none');
  });

  it('rejects everything outstanding, oldest first', () => {
    const log: string[] = [];
    const q = new RpcQueue();
    q.push(rpc('queueDeclare', ['queueDeclareOk'], log));
    q.push(rpc('queueBind', ['queueBindOk'], log));
    q.rejectAll((r, i) => new Error(`${i}:${r.method}`));
    expect(log).toEqual(['queueDeclare ✗ 0:queueDeclare', 'queueBind ✗ 1:queueBind']);
    expect(q.size).toBe(0);
  });

  it('stays FIFO across many pushes and takes', () => {
    const log: string[] = [];
    const q = new RpcQueue();
    for (let round = 0; round < 100; round++) {
      q.push(rpc('queueBind', ['queueBindOk'], log));
      q.push(rpc('queueDeclare', ['queueDeclareOk'], log));
      expect(q.take(ok('queueBindOk')).kind).toBe('matched');
      expect(q.peek()?.method).toBe('queueDeclare');
      expect(q.take(ok('queueDeclareOk')).kind).toBe('matched');
    }
    expect(q.size).toBe(0);
  });
});
