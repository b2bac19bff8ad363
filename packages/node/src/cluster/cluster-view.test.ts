import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import {
  ClusterChangeRefusedError,
  ClusteringDisabledError,
  ClusterNodeNotFoundError,
  clusterAddressProblem,
  clusterErrorFromReply,
  singleNodeClusterView,
} from './cluster-view.ts';

describe('singleNodeClusterView', () => {
  it('is a cluster of one: the node itself, online, the voter and the leader', () => {
    const view = singleNodeClusterView({ nodeName: 'styx@a', nodeId: 'uuid-1' });
    expect(view.members()).toEqual([
      { id: 'uuid-1', peerId: '', name: 'styx@a', address: '', online: true, isSelf: true, voter: 'voter' },
    ]);
    expect(view.metadataLeader()).toBe('uuid-1');
    expect(view.self()).toEqual({ id: 'uuid-1', name: 'styx@a' });
    expect(singleNodeClusterView({ nodeName: 'styx@b' }).self()).toEqual({ id: 'styx@b', name: 'styx@b' });
  });

  it('refuses to join or forget with ClusteringDisabledError', async () => {
    const view = singleNodeClusterView({ nodeName: 'styx@a' });
    await expect(view.join('10.0.0.2:25680')).rejects.toThrow(ClusteringDisabledError);
    await expect(view.forget('styx@b')).rejects.toMatchObject({
      code: 'CLUSTERING_DISABLED',
      message:
        'cannot forget a cluster node: clustering is not enabled on this node (start it with --cluster-listen HOST:PORT)',
    });
  });
});

describe('clusterAddressProblem', () => {
  it('accepts HOST:PORT with a name, IPv4 or bracketed IPv6', () => {
    for (const ok of ['node-b.internal:25680', '10.0.0.5:1', '[fd00::5]:65535', '[::1]:25680']) {
      expect(clusterAddressProblem(ok)).toBeUndefined();
    }
    expect(clusterAddressProblem('127.0.0.1:0', true)).toBeUndefined();
  });

  it('names what is wrong', () => {
    expect(clusterAddressProblem('node-b')).toBe(
      "'node-b' is not HOST:PORT (an IPv6 address goes in brackets: [::1]:25680)",
    );
    for (const bad of [
      '::1:25680',
      ':25680',
      'node-b:',
      'a b:1',
      'node-b:port',
      '/ip4/1.2.3.4/tcp/1',
      '[zz]:1',
    ]) {
      expect(clusterAddressProblem(bad)).toMatch(/is not HOST:PORT/);
    }
    expect(clusterAddressProblem('node-b:0')).toBe("the port of 'node-b:0' must be between 1 and 65535");
    expect(clusterAddressProblem('node-b:65536', true)).toBe(
      "the port of 'node-b:65536' must be between 0 and 65535",
    );
  });
});

describe('clusterErrorFromReply', () => {
  it('maps a 404 reply to ClusterNodeNotFoundError and other refusals to ClusterChangeRefusedError', () => {
    const missing = clusterErrorFromReply({
      type: 'error',
      code: ReplyCode.NOT_FOUND,
      text: "no cluster node 'x'",
    });
    expect(missing).toBeInstanceOf(ClusterNodeNotFoundError);
    expect(missing).toMatchObject({ code: 'CLUSTER_NODE_NOT_FOUND', message: "no cluster node 'x'" });
    const refused = clusterErrorFromReply({
      type: 'error',
      code: ReplyCode.PRECONDITION_FAILED,
      text: 'last',
    });
    expect(refused).toBeInstanceOf(ClusterChangeRefusedError);
    expect(refused.name).toBe('ClusterChangeRefusedError');
  });
});
