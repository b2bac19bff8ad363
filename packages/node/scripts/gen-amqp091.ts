// Writes src/transport/amqp091/spec.gen.ts from RabbitMQ's AMQP 0-9-1 spec JSON.
// Run: pnpm --filter @styx/node gen:amqp
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  renderAmqpSpecModule,
  SPEC_MODULE_PATH,
  SPEC_SOURCE_PATH,
} from '../src/transport/amqp091/spec-render.ts';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(
    `Usage: node scripts/gen-amqp091.ts\n\nWrites ${SPEC_MODULE_PATH} (AMQP 0-9-1 method types, definitions and codecs) from ${SPEC_SOURCE_PATH}.`,
  );
  process.exit(0);
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const spec: unknown = JSON.parse(readFileSync(`${packageRoot}${SPEC_SOURCE_PATH}`, 'utf8'));
writeFileSync(`${packageRoot}${SPEC_MODULE_PATH}`, renderAmqpSpecModule(spec));
console.log(`wrote ${SPEC_MODULE_PATH} from ${SPEC_SOURCE_PATH}`);
