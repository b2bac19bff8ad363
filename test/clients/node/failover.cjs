// At-least-once publishing across a cluster with amqplib and a client-side retry list: publishes
// --count messages with confirms, one at a time, through the first --url that answers; when the
// connection is lost it connects again down the list and republishes what was not confirmed. Then it
// consumes the queue until every confirmed message is back.
// Prints JSON lines: {"connected": url}, {"confirmed": i}, {"lost": reason}, {"received": i},
// {"done": n, "duplicates": d}.
'use strict';
const amqp = require('amqplib');
const { setTimeout: sleep } = require('node:timers/promises');
const { target } = require('./target.cjs');

const options = target({ queue: { type: 'string' }, count: { type: 'string', default: '100' } });
const count = Number(options.count);
const deadline = Date.now() + 60_000;
const say = (line) => console.log(JSON.stringify(line));

/** The first URL of the list that answers, in order, with a confirm channel on the queue. */
async function session() {
  let last;
  for (const url of options.url) {
    try {
      const connection = await amqp.connect(url, options.socketOptions(url));
      // A lost connection also rejects the pending operation, which is where it is handled.
      connection.on('error', () => undefined);
      say({ connected: url.replace(/\/\/[^@]*@/, '//') });
      const channel = await connection.createConfirmChannel();
      channel.on('error', () => undefined);
      await channel.assertQueue(options.queue, { durable: true });
      return { connection, channel };
    } catch (error) {
      last = error;
    }
  }
  throw last;
}

function checkDeadline(progress) {
  if (Date.now() > deadline) throw new Error(`deadline passed with ${progress}`);
}

(async () => {
  let current;
  for (let next = 0; next < count; ) {
    checkDeadline(`${next} of ${count} confirmed`);
    try {
      current ??= await session();
      await new Promise((resolve, reject) =>
        current.channel.publish(
          '',
          options.queue,
          Buffer.from(String(next)),
          { persistent: true },
          (error) => (error ? reject(error) : resolve()),
        ),
      );
      say({ confirmed: next });
      next++;
      await sleep(50);
    } catch (error) {
      say({ lost: String(error) });
      current = undefined;
      await sleep(500);
    }
  }
  const seen = new Set();
  let duplicates = 0;
  while (seen.size < count) {
    checkDeadline(`${seen.size} of ${count} back`);
    try {
      current ??= await session();
      const message = await current.channel.get(options.queue);
      if (message === false) {
        await sleep(100);
        continue;
      }
      const number = Number(message.content.toString());
      if (seen.has(number)) duplicates++;
      else {
        seen.add(number);
        say({ received: number });
      }
      current.channel.ack(message);
    } catch (error) {
      say({ lost: String(error) });
      current = undefined;
      await sleep(500);
    }
  }
  // The channel first: its last ack goes out before the connection's close (see dead-letter.cjs).
  await current.channel.close();
  await current.connection.close();
  say({ done: seen.size, duplicates });
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
