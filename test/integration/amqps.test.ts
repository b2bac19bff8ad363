// amqps: the AMQP 0-9-1 listener over TLS (`--amqps-port`, with the node's certificate), signed by a
// throwaway test CA. amqplib trusts that CA and works as over plain AMQP; a client that does not
// trust it is refused in the TLS handshake, before any AMQP byte.
import { readFile } from 'node:fs/promises';
import type { ThrowawayPki } from '@styx/node';
import { createThrowawayPki } from '@styx/node';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, startBroker } from '../support/broker-process.ts';

let pki: ThrowawayPki;
let ca: string;
let broker: BrokerProcess;

beforeAll(async () => {
  pki = await createThrowawayPki();
  ca = await readFile(pki.caFile, 'utf8');
  const cert = await pki.issue('node', 'server');
  broker = await startBroker({
    extraArgs: [
      '--tls-cert',
      cert.certFile,
      '--tls-key',
      cert.keyFile,
      '--amqps-port',
      String(await freePort()),
    ],
  });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  await broker?.cleanup();
  await pki?.remove();
});

describe('amqps', () => {
  it('amqplib publishes with confirms and gets the message back over TLS', async () => {
    expect(broker.amqpsUrl).toMatch(/^amqps:\/\/127\.0\.0\.1:\d+$/);
    const connection = await amqp.connect((broker.amqpsUrl as string).replace('://', '://guest:guest@'), {
      ca: [ca],
    });
    try {
      const ch = await connection.createConfirmChannel();
      await ch.assertQueue('amqps-q', { durable: true });
      ch.sendToQueue('amqps-q', Buffer.from('secret'));
      await ch.waitForConfirms();
      let got: false | { content: Buffer } = false;
      for (let i = 0; i < 50 && got === false; i++) {
        got = await ch.get('amqps-q', { noAck: true });
        if (got === false) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(got === false ? undefined : got.content.toString()).toBe('secret');
    } finally {
      await connection.close();
    }
  });

  it('a client that does not trust the CA is refused in the TLS handshake', async () => {
    await expect(amqp.connect((broker.amqpsUrl as string).replace('://', '://guest:guest@'))).rejects.toThrow(
      /self.signed|unable to verify|certificate/i,
    );
  });
});
