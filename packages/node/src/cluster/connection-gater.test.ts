import { generateKeyPair } from '@libp2p/crypto/keys';
import type { MultiaddrConnection, PeerId } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import { describe, expect, it } from 'vitest';
import { ClusterGater, REFUSAL_LOG_INTERVAL_MS } from './connection-gater.ts';
import { captureLogger } from './test-support/local-cluster.ts';

const newPeer = async (): Promise<PeerId> => peerIdFromPrivateKey(await generateKeyPair('Ed25519'));

/** The bits of a connection the gater reads. */
const conn = (address: string): MultiaddrConnection =>
  ({ remoteAddr: multiaddr(address) }) as unknown as MultiaddrConnection;

/** Every gate's verdict for `peer` (true: refused). */
async function verdicts(
  gater: ClusterGater,
  peer: PeerId,
  address = '/ip4/127.0.0.1/tcp/1',
): Promise<boolean[]> {
  const hooks = gater.libp2pGater();
  return Promise.all([
    hooks.denyDialPeer?.(peer),
    hooks.denyOutboundConnection?.(peer, conn(address)),
    hooks.denyInboundEncryptedConnection?.(peer, conn(address)),
    hooks.denyOutboundEncryptedConnection?.(peer, conn(address)),
  ]).then((all) => all.map((v) => v === true));
}

describe('ClusterGater', () => {
  it('admits members and approved joins, and refuses anyone else at every gate', async () => {
    const [member, join, stranger] = [await newPeer(), await newPeer(), await newPeer()];
    const gater = new ClusterGater(captureLogger().logger, [member.toString()]);
    gater.approveJoin(join.toString());
    expect(await verdicts(gater, member)).toEqual([false, false, false, false]);
    expect(await verdicts(gater, join)).toEqual([false, false, false, false]);
    expect(await verdicts(gater, stranger)).toEqual([true, true, true, true]);
    expect(gater.isMember(join.toString())).toBe(true);
    expect(gater.isMember(stranger.toString())).toBe(false);
  });

  it('refuses a forgotten node at every gate, even listed as a member, approved, or open to joins', async () => {
    const forgotten = await newPeer();
    const id = forgotten.toString();
    const gater = new ClusterGater(captureLogger().logger, [id]);
    gater.approveJoin(id);
    gater.forget(id);
    expect(gater.isForgotten(id)).toBe(true);
    expect(gater.isMember(id)).toBe(false);
    expect(await verdicts(gater, forgotten)).toEqual([true, true, true, true]);
    gater.openToJoins = true;
    expect(await verdicts(gater, forgotten)).toEqual([true, true, true, true]);
    const release = gater.allowOutbound({ peer: id });
    const releaseAddress = gater.allowOutbound({ address: true });
    expect(await verdicts(gater, forgotten)).toEqual([true, true, true, true]);
    release();
    releaseAddress();
  });

  it('open to joins: admits a stranger at every gate without making it a member', async () => {
    const stranger = await newPeer();
    const gater = new ClusterGater(captureLogger().logger, [], { openToJoins: true });
    expect(await verdicts(gater, stranger)).toEqual([false, false, false, false]);
    expect(gater.isAllowed(stranger.toString())).toBe(true);
    expect(gater.isMember(stranger.toString())).toBe(false);
    gater.openToJoins = false;
    expect(await verdicts(gater, stranger)).toEqual([true, true, true, true]);
  });

  it('lets an outbound allowance through for its dials only, until released', async () => {
    const [peer, other] = [await newPeer(), await newPeer()];
    const gater = new ClusterGater(captureLogger().logger);
    const release = gater.allowOutbound({ peer: peer.toString() });
    const again = gater.allowOutbound({ peer: peer.toString() });
    // Outbound gates open, the inbound one stays shut.
    expect(await verdicts(gater, peer)).toEqual([false, false, true, false]);
    expect(await verdicts(gater, other)).toEqual([true, true, true, true]);
    release();
    release();
    expect((await verdicts(gater, peer))[0]).toBe(false);
    again();
    expect(await verdicts(gater, peer)).toEqual([true, true, true, true]);

    // An address dial admits whoever answers at an address without a peer id.
    const releaseAddress = gater.allowOutbound({ address: true });
    const hooks = gater.libp2pGater();
    expect(hooks.denyOutboundEncryptedConnection?.(other, conn('/ip4/127.0.0.1/tcp/1'))).toBe(false);
    expect(hooks.denyOutboundEncryptedConnection?.(other, conn(`/ip4/127.0.0.1/tcp/1/p2p/${other}`))).toBe(
      true,
    );
    expect(hooks.denyInboundEncryptedConnection?.(other, conn('/ip4/127.0.0.1/tcp/1'))).toBe(true);
    releaseAddress();
    expect(hooks.denyOutboundEncryptedConnection?.(other, conn('/ip4/127.0.0.1/tcp/1'))).toBe(true);
  });

  it('logs at most one refusal per peer per interval, counting the ones it held back', async () => {
    const [noisy, quiet] = [await newPeer(), await newPeer()];
    const { logger, lines } = captureLogger();
    let now = 1_000_000;
    const gater = new ClusterGater(logger, [], { now: () => now });
    const refusals = (): Record<string, unknown>[] =>
      lines.filter((line) => line.level === 40 && String(line.msg).includes('connection refused'));
    for (let i = 0; i < 50; i += 1) await verdicts(gater, noisy);
    expect(refusals().length).toBe(1);
    await verdicts(gater, quiet);
    expect(refusals().map((l) => l.peer)).toEqual([noisy.toString(), quiet.toString()]);
    now += REFUSAL_LOG_INTERVAL_MS - 1;
    await verdicts(gater, noisy);
    expect(refusals().length).toBe(2);
    now += 1;
    await verdicts(gater, noisy);
    expect(refusals().length).toBe(3);
    expect(refusals()[2]).toMatchObject({ peer: noisy.toString(), suppressed: 50 * 4 - 1 + 4 });
    gater.forget(noisy.toString());
    now += REFUSAL_LOG_INTERVAL_MS;
    await verdicts(gater, noisy);
    expect(String(refusals()[3]?.msg)).toContain('forgotten');
  });
});
