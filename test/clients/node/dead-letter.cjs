// Dead-lettering as an application sees it, with amqplib: a queue with a dead-letter exchange, one
// message rejected by its consumer and one that expires (per-message TTL), both published with
// confirms and read back from the dead-letter queue with their x-death headers.
// Prints JSON lines: {"confirmed": body}, {"dead": body, "exchange", "routingKey", "headers"}, {"done": 2}.
'use strict';
const amqp = require('amqplib');
const { target } = require('./target.cjs');

const {
  url: [url],
  prefix,
  socketOptions,
} = target({ prefix: { type: 'string', default: 'amqplib.dl' } });
const say = (line) => console.log(JSON.stringify(line));

(async () => {
  const connection = await amqp.connect(url, socketOptions(url));
  const channel = await connection.createConfirmChannel();
  const [work, dlx, orders, dead] = ['work', 'dlx', 'orders', 'dead'].map((name) => `${prefix}.${name}`);
  await channel.assertExchange(work, 'topic', { durable: true });
  await channel.assertExchange(dlx, 'topic', { durable: true });
  await channel.assertQueue(dead, { durable: true });
  await channel.bindQueue(dead, dlx, '#');
  await channel.assertQueue(orders, {
    durable: true,
    arguments: { 'x-dead-letter-exchange': dlx, 'x-dead-letter-routing-key': 'dead.order' },
  });
  await channel.bindQueue(orders, work, 'order.*');

  channel.publish(work, 'order.created', Buffer.from('reject me'), { persistent: true, mandatory: true });
  await channel.waitForConfirms();
  say({ confirmed: 'reject me' });
  const message = await channel.get(orders);
  if (message === false) throw new Error(`${orders} was empty after a confirmed publish`);
  channel.reject(message, false);

  channel.publish(work, 'order.expired', Buffer.from('let me expire'), { persistent: true, expiration: 50 });
  await channel.waitForConfirms();
  say({ confirmed: 'let me expire' });

  const letters = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`only ${letters.length} of 2 dead letters within 10 s`)),
      10_000,
    );
    channel.consume(dead, (letter) => {
      if (letters.length === 2) return; // one more than expected: left unacknowledged, requeued on close
      channel.ack(letter);
      letters.push(letter);
      say({
        dead: letter.content.toString(),
        exchange: letter.fields.exchange,
        routingKey: letter.fields.routingKey,
        expiration: letter.properties.expiration ?? null,
        headers: letter.properties.headers,
      });
      if (letters.length === 2) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  // Closing the channel first sends its last ack before the connection goes (amqplib writes
  // connection.close on channel 0 ahead of frames still queued on other channels).
  await channel.close();
  await connection.close();
  say({ done: letters.length });
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
