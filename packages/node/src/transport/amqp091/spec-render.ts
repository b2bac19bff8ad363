// Renders RabbitMQ's machine-readable AMQP 0-9-1 definition (spec/amqp-rabbitmq-0.9.1.json, from
// rabbitmq-codegen) into the TypeScript module spec.gen.ts: the constants, one interface per method
// with its fields' domains resolved to types, a table of method definitions, and one encoder and
// one decoder per method plus the basic content properties. Methods are generated, never written
// by hand, so a method added to the JSON cannot be missed or mis-typed. Shared by
// scripts/gen-amqp091.ts, which writes the module, and a unit test that fails when the committed
// module is out of date.

/** The generated module's path, relative to the @styx/node package root. */
export const SPEC_MODULE_PATH = 'src/transport/amqp091/spec.gen.ts';

/** The spec's path, relative to the @styx/node package root. */
export const SPEC_SOURCE_PATH = 'src/transport/amqp091/spec/amqp-rabbitmq-0.9.1.json';

/** The AMQP primitive types a field can resolve to. */
export type AmqpFieldType =
  | 'octet'
  | 'short'
  | 'long'
  | 'longlong'
  | 'shortstr'
  | 'longstr'
  | 'bit'
  | 'timestamp'
  | 'table';

const FIELD_TYPES: ReadonlySet<string> = new Set([
  'octet',
  'short',
  'long',
  'longlong',
  'shortstr',
  'longstr',
  'bit',
  'timestamp',
  'table',
]);

interface SpecField {
  name: string;
  type?: string;
  domain?: string;
  'default-value'?: unknown;
}

interface SpecMethod {
  id: number;
  name: string;
  arguments: SpecField[];
  synchronous?: boolean;
  content?: boolean;
}

interface SpecClass {
  id: number;
  name: string;
  methods: SpecMethod[];
  properties?: SpecField[];
}

interface Spec {
  'major-version': number;
  'minor-version': number;
  revision: number;
  port: number;
  domains: [string, string][];
  constants: { name: string; value: number; class?: string }[];
  classes: SpecClass[];
}

interface Field {
  specName: string;
  key: string;
  type: AmqpFieldType;
  domain: string | undefined;
  hasDefault: boolean;
  defaultValue: unknown;
}

function camel(name: string): string {
  return name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}

function pascal(name: string): string {
  const c = camel(name);
  return c.charAt(0).toUpperCase() + c.slice(1);
}

function resolveFields(spec: Spec, fields: SpecField[], where: string): Field[] {
  const domains = new Map(spec.domains);
  return fields.map((f) => {
    let type = f.type ?? f.domain;
    // Domains may name other domains; follow them to a primitive type.
    for (let hops = 0; type !== undefined && !FIELD_TYPES.has(type) && hops < 10; hops++) {
      type = domains.get(type);
    }
    if (type === undefined || !FIELD_TYPES.has(type)) {
      throw new Error(`${where}.${f.name}: cannot resolve ${f.type ?? f.domain} to an AMQP type`);
    }
    return {
      specName: f.name,
      key: camel(f.name),
      type: type as AmqpFieldType,
      domain: f.domain,
      hasDefault: 'default-value' in f,
      defaultValue: f['default-value'],
    };
  });
}

const DECODED_TS: Record<AmqpFieldType, string> = {
  octet: 'number',
  short: 'number',
  long: 'number',
  longlong: 'number',
  shortstr: 'string',
  longstr: 'Buffer',
  bit: 'boolean',
  timestamp: 'number',
  table: 'FieldTable',
};

const INIT_TS: Record<AmqpFieldType, string> = { ...DECODED_TS, longstr: 'Uint8Array | string' };

const READ: Record<Exclude<AmqpFieldType, 'bit'>, string> = {
  octet: 'r.octet()',
  short: 'r.short()',
  long: 'r.long()',
  longlong: 'r.longlong()',
  shortstr: 'r.shortstr()',
  longstr: 'r.longstr()',
  timestamp: 'r.longlong()',
  table: 'readFieldTable(r)',
};

function writeCall(type: Exclude<AmqpFieldType, 'bit'>, value: string): string {
  switch (type) {
    case 'timestamp':
      return `w.longlong(${value});`;
    case 'table':
      return `writeFieldTable(w, ${value});`;
    default:
      return `w.${type}(${value});`;
  }
}

function defaultLiteral(f: Field): string {
  if (f.type === 'table') return ''; // writeFieldTable writes an absent table as an empty one
  return ` ?? ${literal(f.defaultValue)}`;
}

/** A JS literal in the repository's style (single-quoted strings). */
function literal(v: unknown): string {
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return JSON.stringify(v);
}

/** Groups consecutive bit fields: AMQP packs up to 8 of them into one octet, low bit first. */
function runs(fields: Field[]): (Field | Field[])[] {
  const out: (Field | Field[])[] = [];
  let bits: Field[] | undefined;
  for (const f of fields) {
    if (f.type === 'bit') {
      if (bits === undefined || bits.length === 8) {
        bits = [];
        out.push(bits);
      }
      bits.push(f);
    } else {
      bits = undefined;
      out.push(f);
    }
  }
  return out;
}

function renderDecoder(fn: string, type: string, fields: Field[]): string[] {
  if (fields.length === 0) return [`function ${fn}(_r: AmqpReader): ${type} {`, '  return {};', '}'];
  const lines = [`function ${fn}(r: AmqpReader): ${type} {`];
  const props: string[] = [];
  let bitsVar = 0;
  for (const run of runs(fields)) {
    if (Array.isArray(run)) {
      const v = `bits${bitsVar++}`;
      lines.push(`  const ${v} = r.octet();`);
      run.forEach((f, i) => {
        props.push(`${f.key}: (${v} & ${1 << i}) !== 0`);
      });
    } else {
      // Locals are numbered: a field may be called `arguments`, which strict mode reserves.
      const v = `f${props.length}`;
      lines.push(`  const ${v} = ${READ[run.type as Exclude<AmqpFieldType, 'bit'>]};`);
      props.push(`${run.key}: ${v}`);
    }
  }
  lines.push('  return {');
  for (const p of props) lines.push(`    ${p},`);
  lines.push('  };', '}');
  return lines;
}

function renderEncoder(fn: string, type: string, fields: Field[]): string[] {
  if (fields.length === 0) return [`function ${fn}(_w: AmqpWriter, _a: ${type}): void {}`];
  const lines = [`function ${fn}(w: AmqpWriter, a: ${type}): void {`];
  let bitsVar = 0;
  for (const run of runs(fields)) {
    if (Array.isArray(run)) {
      const v = `bits${bitsVar++}`;
      lines.push(`  let ${v} = 0;`);
      run.forEach((f, i) => {
        const value = f.hasDefault ? `a.${f.key} ?? ${literal(f.defaultValue)}` : `a.${f.key}`;
        lines.push(`  if (${value}) ${v} |= ${1 << i};`);
      });
      lines.push(`  w.octet(${v});`);
    } else {
      const value = run.hasDefault ? `a.${run.key}${defaultLiteral(run)}` : `a.${run.key}`;
      lines.push(`  ${writeCall(run.type as Exclude<AmqpFieldType, 'bit'>, value)}`);
    }
  }
  lines.push('}');
  return lines;
}

function renderInterface(name: string, doc: string, fields: Field[], init: boolean): string[] {
  if (fields.length === 0) return [`/** ${doc} */`, `export type ${name} = Record<string, never>;`];
  const lines = [`/** ${doc} */`, `export interface ${name} {`];
  for (const f of fields) {
    const ts = (init ? INIT_TS : DECODED_TS)[f.type];
    const optional = init && f.hasDefault ? '?' : '';
    const domain = f.domain !== undefined && f.domain !== f.type ? ` (domain ${f.domain})` : '';
    lines.push(`  /** ${f.specName}: ${f.type}${domain}. */`);
    lines.push(`  ${f.key}${optional}: ${ts};`);
  }
  lines.push('}');
  return lines;
}

function renderProperties(cls: SpecClass, fields: Field[]): string[] {
  if (fields.length > 15) {
    throw new Error(`class ${cls.name}: more than 15 properties needs flag continuation on encode`);
  }
  if (cls.name !== 'basic') throw new Error(`class ${cls.name}: only basic properties are mapped`);
  const dec = [
    `/** Decodes the ${cls.name} class's content properties (flags, then the present ones in order). */`,
    `export function decode${pascal(cls.name)}Properties(r: AmqpReader): BasicProperties {`,
    `  const flags = readPropertyFlags(r, ${fields.length});`,
    '  const p: BasicProperties = {};',
  ];
  const enc = [
    `/** Encodes the ${cls.name} class's content properties; null and undefined mean absent. */`,
    `export function encode${pascal(cls.name)}Properties(w: AmqpWriter, p: BasicProperties): void {`,
    '  w.ensure(2);',
    '  const at = w.pos;',
    '  w.pos += 2;',
    '  let flags = 0;',
  ];
  fields.forEach((f, i) => {
    const bit = `0x${(1 << (15 - i)).toString(16)}`;
    if (f.type === 'bit') throw new Error(`class ${cls.name}: bit properties are not supported`);
    const read = READ[f.type];
    dec.push(`  if ((flags & ${bit}) !== 0) p.${f.key} = ${read};`);
    enc.push(`  if (p.${f.key} != null) {`);
    enc.push(`    flags |= ${bit};`);
    enc.push(`    ${writeCall(f.type, `p.${f.key}`)}`);
    enc.push('  }');
  });
  dec.push('  return p;', '}');
  enc.push('  w.buf.writeUInt16BE(flags, at);', '}');
  const names = fields.map((f) => `  '${f.key}',`);
  return [
    `/** The ${cls.name} class's content properties in flag order (bit 15 first). */`,
    `export const ${cls.name.toUpperCase()}_PROPERTY_KEYS = [`,
    ...names,
    '] as const;',
    '',
    ...dec,
    '',
    ...enc,
  ];
}

/** The full text of spec.gen.ts for the parsed spec JSON. */
export function renderAmqpSpecModule(json: unknown): string {
  const spec = json as Spec;
  const out: string[] = [
    `// Generated by scripts/gen-amqp091.ts from ${SPEC_SOURCE_PATH}: do not edit.`,
    '// Regenerate with `pnpm --filter @styx/node gen:amqp`; a unit test fails when this is out of date.',
    "// The spec JSON is RabbitMQ's (rabbitmq-codegen, MIT licence): see spec/README.md.",
    "import type { BasicProperties, FieldTable } from '@styx/client/wire';",
    "import type { AmqpReader } from './amqp-reader.ts';",
    "import type { AmqpWriter } from './amqp-writer.ts';",
    "import { notImplemented } from './codec-error.ts';",
    "import { readFieldTable, writeFieldTable } from './field-table-codec.ts';",
    "import { readPropertyFlags } from './property-flags.ts';",
    '',
    '/** The protocol version this module encodes. */',
    'export const AMQP_VERSION = {',
    `  major: ${spec['major-version']},`,
    `  minor: ${spec['minor-version']},`,
    `  revision: ${spec.revision},`,
    `  port: ${spec.port},`,
    '} as const;',
    '',
    "/** The spec's constants (frame types, frame-end, reply codes), named as in the spec. */",
    'export const AMQP_CONSTANTS = {',
  ];
  for (const c of spec.constants) out.push(`  ${c.name.replace(/-/g, '_')}: ${c.value},`);
  out.push('} as const;', '');

  const methods: { name: string; type: string; cls: SpecClass; m: SpecMethod; fields: Field[] }[] = [];
  for (const cls of spec.classes) {
    for (const m of cls.methods) {
      const name = `${cls.name}.${m.name}`;
      const fields = resolveFields(spec, m.arguments, name);
      methods.push({ name, type: `${pascal(cls.name)}${pascal(m.name)}`, cls, m, fields });
    }
  }

  for (const { name, type, fields } of methods) {
    out.push(...renderInterface(type, `${name}'s fields, as decoded.`, fields, false), '');
    if (fields.some((f) => f.hasDefault)) {
      out.push(
        ...renderInterface(
          `${type}Init`,
          `${name}'s fields to encode; spec defaults may be left out.`,
          fields,
          true,
        ),
        '',
      );
    } else {
      out.push(`/** ${name}'s fields to encode (none has a default). */`);
      out.push(`export type ${type}Init = ${type.replace(/^/, '')};`, '');
    }
  }

  out.push(
    '/** Every method, by its spec name, with its decoded fields. */',
    'export interface MethodArgs {',
  );
  for (const { name, type } of methods) out.push(`  '${name}': ${type};`);
  out.push('}', '', '/** Every method, by its spec name, with the fields it is encoded from. */');
  out.push('export interface MethodInits {');
  for (const { name, type } of methods) out.push(`  '${name}': ${type}Init;`);
  out.push('}', '');
  out.push(
    "/** A method's spec name: `'class.method'`, as RabbitMQ writes it ('basic.publish'). */",
    'export type MethodName = keyof MethodArgs;',
    '',
    '/** A decoded method: its name (the discriminant) and its fields. */',
    'export type AmqpMethod = { [K in MethodName]: { name: K; args: MethodArgs[K] } }[MethodName];',
    '',
    '/** A method to encode. */',
    'export type AmqpMethodInit = { [K in MethodName]: { name: K; args: MethodInits[K] } }[MethodName];',
    '',
    '/** One field of a method, as the spec defines it. */',
    'export interface FieldDef {',
    "  /** The spec's name (`routing-key`). */",
    '  readonly specName: string;',
    '  /** The property in the args object (`routingKey`). */',
    '  readonly key: string;',
    '  /** The AMQP type the domain resolves to. */',
    '  readonly type:',
    ...[...FIELD_TYPES].map((t, i, all) => `    | '${t}'${i === all.length - 1 ? ';' : ''}`),
    '}',
    '',
    '/** One method, as the spec defines it. */',
    'export interface MethodDef {',
    '  readonly name: MethodName;',
    '  readonly classId: number;',
    '  readonly methodId: number;',
    '  /** The peer answers it with a -ok method. */',
    '  readonly synchronous: boolean;',
    '  /** A content header and body frames follow it. */',
    '  readonly content: boolean;',
    '  readonly fields: readonly FieldDef[];',
    '}',
    '',
    '/** Every method of the spec, in spec order. */',
    'export const METHOD_DEFS: readonly MethodDef[] = [',
  );
  for (const { name, cls, m, fields } of methods) {
    out.push('  {');
    out.push(`    name: '${name}',`);
    out.push(`    classId: ${cls.id},`);
    out.push(`    methodId: ${m.id},`);
    out.push(`    synchronous: ${m.synchronous === true},`);
    out.push(`    content: ${m.content === true},`);
    const defs = fields.map((f) => `{ specName: '${f.specName}', key: '${f.key}', type: '${f.type}' }`);
    const oneLine = `    fields: [${defs.join(', ')}],`;
    if (oneLine.length <= 110) out.push(oneLine);
    else out.push('    fields: [', ...defs.map((d) => `      ${d},`), '    ],');
    out.push('  },');
  }
  out.push('];', '');

  for (const { type, fields } of methods) {
    out.push(...renderDecoder(`decode${type}`, type, fields), '');
    out.push(...renderEncoder(`encode${type}`, `${type}Init`, fields), '');
  }

  out.push(
    '/**',
    " * Decodes a method frame's fields (after its class and method ids) into a named method. An id",
    ' * pair the spec does not define is a 540 NOT_IMPLEMENTED; truncated fields are a 501 FRAME_ERROR.',
    ' */',
    'export function decodeMethodFields(r: AmqpReader, classId: number, methodId: number): AmqpMethod {',
    '  r.classId = classId;',
    '  r.methodId = methodId;',
    '  switch (classId * 65536 + methodId) {',
  );
  for (const { name, type, cls, m } of methods) {
    out.push(`    case ${cls.id * 65536 + m.id}:`);
    out.push(`      return { name: '${name}', args: decode${type}(r) };`);
  }
  out.push(
    '    default:',
    `      throw notImplemented(\`unknown method: class \${classId}, method \${methodId}\`, classId, methodId);`,
    '  }',
    '}',
    '',
    "/** Encodes a method's class id, method id and fields (a method frame's payload). */",
    'export function encodeMethodFields(w: AmqpWriter, m: AmqpMethodInit): void {',
    '  switch (m.name) {',
  );
  for (const { name, type, cls, m } of methods) {
    out.push(`    case '${name}':`);
    out.push(`      w.short(${cls.id});`);
    out.push(`      w.short(${m.id});`);
    out.push(`      encode${type}(w, m.args);`);
    out.push('      return;');
  }
  out.push('  }', '}', '');

  for (const cls of spec.classes) {
    const props = cls.properties ?? [];
    if (props.length === 0) continue;
    out.push(...renderProperties(cls, resolveFields(spec, props, `${cls.name} properties`)), '');
  }
  return out.join('\n');
}
