// Writes src/wire/schema.gen.ts from proto/styx.proto. Run: pnpm --filter @styx/client gen
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderSchemaModule, SCHEMA_MODULE_PATH, SCHEMA_SOURCE_PATH } from '../src/wire/schema-render.ts';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(
    'Usage: node scripts/gen-schema.ts\n\nWrites src/wire/schema.gen.ts (the schema text the codec loads) from proto/styx.proto.',
  );
  process.exit(0);
}

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const protoText = readFileSync(`${packageRoot}${SCHEMA_SOURCE_PATH}`, 'utf8');
writeFileSync(`${packageRoot}${SCHEMA_MODULE_PATH}`, renderSchemaModule(protoText));
console.log(`wrote ${SCHEMA_MODULE_PATH} from ${SCHEMA_SOURCE_PATH}`);
