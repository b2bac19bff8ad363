// The broker these programs talk to, from the command line: `--url URL` (repeat it for a retry list,
// tried in order) and, for amqps:// URLs, `--ca FILE`, the PEM CA certificate to verify the broker
// with. Plain amqplib: nothing here knows which broker it talks to.
'use strict';
const fs = require('node:fs');
const { parseArgs } = require('node:util');

function target(extra = {}) {
  const { values } = parseArgs({
    options: { url: { type: 'string', multiple: true }, ca: { type: 'string' }, ...extra },
  });
  if (values.url === undefined) throw new Error('usage: --url URL [--url URL...] [--ca FILE]');
  /** amqplib's socket options for `url`: the CA for amqps://, nothing for amqp://. */
  const socketOptions = (url) => (url.startsWith('amqps://') ? { ca: [fs.readFileSync(values.ca)] } : {});
  return { ...values, socketOptions };
}

module.exports = { target };
