// Writes src/wire/schema.gen.ts from proto/styx.proto. Run: pnpm --filter @styx/client gen
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderSchemaModule, SCHEMA_MODULE_PATH, SCHEMA_SOURCE_PATH } from '../src/wire/schema-render.ts';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const protoText = readFileSync(`${packageRoot}${SCHEMA_SOURCE_PATH}`, 'utf8');
writeFileSync(`${packageRoot}${SCHEMA_MODULE_PATH}`, renderSchemaModule(protoText));
console.log(`wrote ${SCHEMA_MODULE_PATH} from ${SCHEMA_SOURCE_PATH}`);
