import { describe, expect, it } from 'vitest';
import { ownerNodeName } from './cluster-queues.ts';

describe('ownerNodeName', () => {
  it.each([
    // owner ids: `${nodeName}:${run}.${n}/${channel}` (run is base64url: no ':', '/' or '.')
    ['styx-1:AbC-_9.3/7', 'styx-1'],
    ['styx-1:AbC-_9.12/65535', 'styx-1'],
    // node names are free text: colons, dots and slashes in them
    ['host:5672:AbCd.1/1', 'host:5672'],
    ['node.example.com:run.4/2', 'node.example.com'],
    ['rack/1:run.4/2', 'rack/1'],
    ['ñœud-ü:run.1/1', 'ñœud-ü'],
    // connection ids (no channel)
    ['styx-2:run.9', 'styx-2'],
    ['a:b:run.9', 'a:b'],
  ])('%s → %s', (owner, name) => {
    expect(ownerNodeName(owner)).toBe(name);
  });

  it('an id without a node part names itself (a single node’s owners, before clustering)', () => {
    expect(ownerNodeName('conn-1/1')).toBe('conn-1');
    expect(ownerNodeName('plain')).toBe('plain');
  });
});
