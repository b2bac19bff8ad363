import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { decodeBatch, encodeBatch, frame } from './codec.ts';
import { wireType } from './schema.ts';
import { renderSchemaModule, SCHEMA_MODULE_PATH, SCHEMA_SOURCE_PATH } from './schema-render.ts';
import { FIELD_VALUE_KINDS, METHOD_NAMES } from './types.ts';

const packageRoot = new URL('../../', import.meta.url);

describe('schema', () => {
  it('schema.gen.ts is up to date with proto/styx.proto (run `pnpm --filter @styx/client gen`)', () => {
    const proto = readFileSync(new URL(SCHEMA_SOURCE_PATH, packageRoot), 'utf8');
    const generated = readFileSync(new URL(SCHEMA_MODULE_PATH, packageRoot), 'utf8');
    expect(generated).toBe(renderSchemaModule(proto));
  });

  it('renders text that a template literal reproduces exactly', () => {
    const tricky = `a \`tick\` \${not} \\ back\nline`;
    const module = renderSchemaModule(tricky);
    const start = module.indexOf('= `') + 2;
    const literal = module.slice(start, module.lastIndexOf('`') + 1);
    expect(new Function(`return ${literal};`)()).toBe(tricky);
  });

  it('METHOD_NAMES lists the Frame oneof members in schema order', () => {
    const oneof = wireType('Frame').oneofs.method;
    expect(oneof?.oneof).toEqual([...METHOD_NAMES]);
  });

  it('FIELD_VALUE_KINDS lists the FieldValue oneof members in schema order', () => {
    expect(wireType('FieldValue').oneofs.value?.oneof).toEqual([...FIELD_VALUE_KINDS]);
  });

  it('leaves protobufjs global 64-bit handling alone', () => {
    // Another protobufjs user in the same process still gets Long values.
    const other = protobuf.parse('syntax = "proto3"; message M { uint64 v = 1; }').root.lookupType('M');
    const decoded = other.decode(other.encode({ v: 7 }).finish()) as unknown as { v: unknown };
    expect(typeof decoded.v).toBe('object');
  });

  it('decoded unset oneof members read as undefined, set ones as their value', () => {
    const [f] = decodeBatch(encodeBatch([frame(3, 'basicAck', { deliveryTag: 0, multiple: true })]));
    const raw = f as unknown as Record<string, unknown>;
    expect(raw.basicPublish).toBeUndefined();
    expect(f?.method).toBe('basicAck');
    if (f?.method !== 'basicAck') throw new Error('narrowing');
    // A zero 64-bit field absent from the wire reads as the number 0, not a Long.
    expect(f.basicAck.deliveryTag).toBe(0);
    expect(f.basicAck.multiple).toBe(true);
  });
});
