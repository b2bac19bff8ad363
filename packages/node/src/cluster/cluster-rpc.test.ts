import type { Stream } from '@libp2p/interface';
import { PeerUnreachableError } from '@styx/raft';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  decodeRpcRequest,
  decodeRpcResponse,
  encodeRpcRequest,
  encodeRpcResponse,
  MAX_RPC_ERROR_TEXT_BYTES,
  RPC_PROTOCOL,
  RpcError,
  RpcProtocolError,
  RpcRemoteError,
  RpcTimeoutError,
} from './cluster-rpc.ts';
import { FrameTooLargeError } from './errors.ts';
import { peerMultiaddr } from './peer-address.ts';
import { CLUSTER_PROTOCOL_VERSION } from './protocol-version.ts';
import { encodeFrame } from './raft-frames.ts';
import type { LocalNode } from './test-support/local-cluster.ts';
import { deadAddress, LocalCluster } from './test-support/local-cluster.ts';

const WAIT = { timeout: 10_000 };
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (data: Uint8Array): string => new TextDecoder().decode(data);

const logged = (local: LocalNode, level: number, msg: string): Record<string, unknown>[] =>
  local.lines.filter((line) => line.level === level && String(line.msg).includes(msg));
const WARN = 40;
const ERROR = 50;

/** Resolves once `stream` is closed (at either end, or reset). */
const closed = (stream: Stream): Promise<void> =>
  new Promise((resolve) => {
    if (stream.status !== 'open') resolve();
    else stream.addEventListener('close', () => resolve(), { once: true });
  });

describe('rpc messages', () => {
  it('round-trip requests and responses, and cut long error texts', () => {
    expect(decodeRpcRequest(encodeRpcRequest('join', bytes('x')))).toEqual({
      kind: 'join',
      payload: bytes('x'),
    });
    expect(decodeRpcResponse(encodeRpcResponse({ ok: true, payload: bytes('y') }))).toEqual({
      ok: true,
      payload: bytes('y'),
    });
    const long = decodeRpcResponse(encodeRpcResponse({ ok: false, code: '404', text: 'x'.repeat(5_000) }));
    expect(long).toEqual({ ok: false, code: '404', text: 'x'.repeat(MAX_RPC_ERROR_TEXT_BYTES) });
  });

  it('refuse bad names when encoding and malformed bytes when decoding', () => {
    expect(() => encodeRpcRequest('', bytes('x'))).toThrow(RangeError);
    expect(() => encodeRpcRequest('k'.repeat(256), bytes('x'))).toThrow(RangeError);
    expect(() => new RpcError('', 'no code')).toThrow(RangeError);
    expect(() => decodeRpcRequest(new Uint8Array([]))).toThrow(RpcProtocolError);
    expect(() => decodeRpcRequest(new Uint8Array([5, 0x61]))).toThrow(RpcProtocolError);
    expect(() => decodeRpcRequest(new Uint8Array([1, 0xff]))).toThrow(RpcProtocolError);
    expect(() => decodeRpcResponse(new Uint8Array([7]))).toThrow(RpcProtocolError);
    expect(() => decodeRpcResponse(new Uint8Array([1, 0]))).toThrow(RpcProtocolError);
  });
});

describe('ClusterRpc on loopback', () => {
  let local = new LocalCluster();

  afterEach(async () => {
    await local.stop();
    local = new LocalCluster();
  });

  async function pair(): Promise<[LocalNode, LocalNode]> {
    const [a, b] = await local.startMesh(2);
    if (a === undefined || b === undefined) throw new Error('no nodes');
    return [a, b];
  }

  it('answers a call with the handler result, telling the handler who called', async () => {
    const [a, b] = await pair();
    a.rpc.handle('echo', async (payload, from) => bytes(`${text(payload)} from ${from}`));
    const answer = await b.rpc.call(a.nodeId, 'echo', bytes('hello'));
    expect(text(answer)).toBe(`hello from ${b.nodeId}`);
    expect(() => a.rpc.handle('echo', async (p) => p)).toThrow(/already set/);
  });

  it('carries a large payload both ways, and refuses one above the bound before sending', async () => {
    const [a, b] = await pair();
    a.rpc.handle('reverse', async (payload) => payload.slice().reverse());
    const big = new Uint8Array(6 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 1) big[i] = (i * 31) & 0xff;
    const answer = await b.rpc.call(a.nodeId, 'reverse', big);
    expect(answer.byteLength).toBe(big.byteLength);
    expect(Buffer.from(answer).equals(Buffer.from(big.slice().reverse()))).toBe(true);
    await expect(b.rpc.call(a.nodeId, 'reverse', new Uint8Array(17 * 1024 * 1024))).rejects.toBeInstanceOf(
      FrameTooLargeError,
    );
  });

  it('answers an oversize handler result with INTERNAL', async () => {
    const idA = await local.identity();
    const idB = await local.identity();
    const members = [idA.nodeId, idB.nodeId];
    const a = await local.start(idA, { members, rpcMaxMessageBytes: 1_024 });
    const b = await local.start(idB, { members });
    b.rpc.addPeer(a.nodeId, a.address);
    a.rpc.handle('big', async () => new Uint8Array(4_096));
    const failure = await b.rpc.call(a.nodeId, 'big', bytes('')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RpcRemoteError);
    expect((failure as RpcRemoteError).code).toBe('INTERNAL');
    expect(logged(a, ERROR, 'exceeds the message bound').length).toBe(1);
  });

  it('serves concurrent calls, each on its own stream, in any order', async () => {
    const [a, b] = await pair();
    a.rpc.handle('slow-echo', async (payload) => {
      await new Promise((resolve) => setTimeout(resolve, (payload[0] ?? 0) % 20));
      return payload;
    });
    const calls = Array.from({ length: 100 }, (_, i) =>
      b.rpc.call(a.nodeId, 'slow-echo', new Uint8Array([i, i])),
    );
    const answers = await Promise.all(calls);
    expect(answers.map((x) => x[0])).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('rejects with RpcRemoteError carrying the code a handler threw, and INTERNAL for anything else', async () => {
    const [a, b] = await pair();
    a.rpc.handle('declare', async () => {
      throw new RpcError('404', 'no queue named q');
    });
    a.rpc.handle('crash', async () => {
      throw new TypeError('a bug in the handler');
    });
    const failure = await b.rpc.call(a.nodeId, 'declare', bytes('q')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RpcRemoteError);
    expect(failure).toMatchObject({
      code: '404',
      message: 'no queue named q',
      peer: a.nodeId,
      kind: 'declare',
    });

    const crash = await b.rpc.call(a.nodeId, 'crash', bytes('')).catch((e: unknown) => e);
    expect(crash).toMatchObject({ code: 'INTERNAL' });
    expect(crash).toBeInstanceOf(RpcRemoteError);
    expect(logged(a, ERROR, 'handler failed')[0]?.kind).toBe('crash');
    // The responder goes on.
    a.rpc.handle('ping', async () => bytes('pong'));
    expect(text(await b.rpc.call(a.nodeId, 'ping', bytes('')))).toBe('pong');
  });

  it('answers UNKNOWN_KIND for a kind without a handler (RpcUnknownKindError, a remote error naming versions)', async () => {
    const [a, b] = await pair();
    const failure = await b.rpc.call(a.nodeId, 'nothing-here', bytes('')).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RpcRemoteError);
    expect(failure).toMatchObject({
      name: 'RpcUnknownKindError',
      code: 'UNKNOWN_KIND',
      kind: 'nothing-here',
    });
    expect((failure as Error).message).toContain(
      `(cluster protocol version ${CLUSTER_PROTOCOL_VERSION}) does not know rpc kind 'nothing-here'`,
    );
  });

  it('times out with RpcTimeoutError when the handler does not answer', async () => {
    const [a, b] = await pair();
    a.rpc.handle('hang', () => new Promise<Uint8Array>(() => {}));
    const started = Date.now();
    const failure = await b.rpc.call(a.nodeId, 'hang', bytes(''), 300).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RpcTimeoutError);
    expect(failure).toMatchObject({ code: 'RPC_TIMEOUT', peer: a.nodeId, kind: 'hang', timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('rejects with PeerUnreachableError for a peer without an address, or with nothing listening', async () => {
    const [a, b] = await pair();
    const ghost = await local.identity();
    a.gater.approveJoin(ghost.nodeId);
    await expect(a.rpc.call(ghost.nodeId, 'ping', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
    const dead = await deadAddress();
    a.rpc.addPeer(ghost.nodeId, dead);
    await expect(a.rpc.call(ghost.nodeId, 'ping', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
    await expect(a.rpc.callAddress(dead, 'ping', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
    // A peer that stopped.
    await local.stopNode(b);
    await expect(a.rpc.call(b.nodeId, 'ping', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
    a.rpc.removePeer(b.nodeId);
    await expect(a.rpc.call(b.nodeId, 'ping', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
  });

  it('callAddress reaches a node whose id the caller does not know, and returns its proven id', async () => {
    const joinerId = await local.identity();
    const seedId = await local.identity();
    // The seed admits the joiner (an approved join); the joiner's gater knows only itself.
    const seed = await local.start(seedId, { members: [seedId.nodeId, joinerId.nodeId] });
    const joiner = await local.start(joinerId, { members: [joinerId.nodeId] });
    seed.rpc.handle('join', async (payload, from) => bytes(`${text(payload)}:${from}`));
    const { peerId, response } = await joiner.rpc.callAddress(seed.address, 'join', bytes('hi'));
    expect(peerId).toBe(seed.nodeId);
    expect(text(response)).toBe(`hi:${joiner.nodeId}`);
    expect(joiner.gater.isAllowed(seed.nodeId)).toBe(false);

    // A call by id works too before the joiner's gater lists the seed.
    joiner.rpc.addPeer(seed.nodeId, seed.address);
    await joiner.node.hangUp(seed.node.peerId);
    expect(text(await joiner.rpc.call(seed.nodeId, 'join', bytes('again')))).toBe(`again:${joiner.nodeId}`);
  });

  it('refuses a call that admit rejects with FORBIDDEN, before the handler sees it', async () => {
    const idA = await local.identity();
    const idB = await local.identity();
    const members = [idA.nodeId, idB.nodeId];
    const a = await local.start(idA, { members, rpcAdmit: (_peer, kind) => kind !== 'members-only' });
    const b = await local.start(idB, { members });
    b.rpc.addPeer(a.nodeId, a.address);
    const handler = vi.fn(async () => bytes('secret'));
    a.rpc.handle('members-only', handler);
    a.rpc.handle('open', async () => bytes('fine'));
    await expect(b.rpc.call(a.nodeId, 'members-only', bytes(''))).rejects.toMatchObject({
      code: 'FORBIDDEN',
    });
    expect(handler).not.toHaveBeenCalled();
    expect(logged(a, WARN, 'cluster rpc refused')[0]).toMatchObject({ peer: b.nodeId, kind: 'members-only' });
    expect(text(await b.rpc.call(a.nodeId, 'open', bytes('')))).toBe('fine');
  });

  it('closes only the stream of a malformed request; the node keeps answering', async () => {
    const [a, b] = await pair();
    const handler = vi.fn(async (payload: Uint8Array) => payload);
    a.rpc.handle('echo', handler);
    const target = peerMultiaddr(a.address, a.node.peerId);
    const raw = async (...chunks: Uint8Array[]): Promise<void> => {
      const stream = await b.node.dialProtocol(target, RPC_PROTOCOL);
      for (const chunk of chunks) stream.send(chunk);
      await stream.close().catch(() => {});
      await closed(stream);
    };
    // A length prefix past the bound (16 MiB).
    await raw(new Uint8Array([0xff, 0xff, 0xff, 0xff]));
    // A frame whose kind length runs past its end.
    await raw(encodeFrame(new Uint8Array([40, 0x61])));
    // Half a frame, then the end of the stream.
    await raw(encodeFrame(encodeRpcRequest('echo', bytes('cut'))).subarray(0, 7));
    // Two requests on one stream.
    const one = encodeFrame(encodeRpcRequest('echo', bytes('1')));
    await raw(new Uint8Array([...one, ...one]));

    await vi.waitFor(() => expect(logged(a, WARN, 'malformed cluster rpc request').length).toBe(4), WAIT);
    expect(handler).not.toHaveBeenCalled();
    expect(text(await b.rpc.call(a.nodeId, 'echo', bytes('still here')))).toBe('still here');
    expect(a.node.getConnections(b.node.peerId).length).toBeGreaterThan(0);
  });

  it('rejects pending calls with PeerUnreachableError when closed', async () => {
    const [a, b] = await pair();
    a.rpc.handle('hang', () => new Promise<Uint8Array>(() => {}));
    const pending = b.rpc.call(a.nodeId, 'hang', bytes(''), 5_000);
    await vi.waitFor(() => expect(a.node.getConnections(b.node.peerId).length).toBeGreaterThan(0), WAIT);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await b.rpc.close();
    await expect(pending).rejects.toBeInstanceOf(PeerUnreachableError);
    await expect(b.rpc.call(a.nodeId, 'hang', bytes(''))).rejects.toBeInstanceOf(PeerUnreachableError);
  });
});
