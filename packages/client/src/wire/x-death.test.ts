import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeBatch, encodeBatch, frame } from './codec.ts';
import { fieldTableToJs } from './field-js.ts';
import { fieldValueKind, tableGet } from './field-table.ts';
import type { FieldTable, FieldValue } from './types.ts';

// Headers captured from RabbitMQ 3.10.8 (see test/fixtures/README.md): for each stage the typed
// wire view (tag letters) and what amqplib decoded.
const FIXTURE = new URL('../../../../test/fixtures/rabbitmq-3.10-x-death.json', import.meta.url);

interface TypedWire {
  t: string;
  v: unknown;
}
interface Stage {
  properties_amqplib: { headers: Record<string, unknown> };
  properties_wire_typed: { headers: Record<string, TypedWire> };
}
interface Fixture {
  samples: Record<string, Record<string, Stage | string | object>>;
}

const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Fixture;

const stages: [string, Stage][] = Object.entries(fixture.samples).flatMap(([sample, stagesOf]) =>
  Object.entries(stagesOf)
    .filter(
      (entry): entry is [string, Stage] =>
        typeof entry[1] === 'object' && 'properties_wire_typed' in entry[1],
    )
    .map(([stage, s]) => [`${sample} ${stage}`, s] as [string, Stage]),
);

/** The wire value a tag letter stands for (the README's legend). */
function fromTyped({ t, v }: TypedWire): FieldValue {
  switch (t) {
    case 'S':
      return { longStr: v as string };
    case 'l':
      return { i64: v as number };
    case 'b':
      return { i8: v as number };
    case 'T':
      return { timestamp: v as number };
    case 'A':
      return { array: { values: (v as TypedWire[]).map(fromTyped) } };
    case 'F':
      return { table: tableFromTyped(v as Record<string, TypedWire>) };
    default:
      throw new Error(`fixture tag ${t} not handled`);
  }
}

function tableFromTyped(obj: Record<string, TypedWire>): FieldTable {
  return { entries: Object.entries(obj).map(([key, value]) => ({ key, value: fromTyped(value) })) };
}

const TAG_OF: Record<string, string> = {
  longStr: 'S',
  i64: 'l',
  i8: 'b',
  timestamp: 'T',
  array: 'A',
  table: 'F',
};

/** The fixture's tag-letter view of a decoded value, to compare types and order. */
function toTyped(v: FieldValue): TypedWire {
  const kind = fieldValueKind(v) as string;
  const payload = (v as unknown as Record<string, unknown>)[kind];
  if (kind === 'array') return { t: 'A', v: (payload as { values: FieldValue[] }).values.map(toTyped) };
  if (kind === 'table') return { t: 'F', v: tableToTyped(payload as FieldTable) };
  return { t: TAG_OF[kind] as string, v: payload };
}

function tableToTyped(t: FieldTable): Record<string, TypedWire> {
  return Object.fromEntries(t.entries.map((e) => [e.key, toTyped(e.value)]));
}

function throughTheWire(headers: FieldTable): FieldTable {
  const [f] = decodeBatch(
    encodeBatch([
      frame(1, 'basicDeliver', {
        consumerTag: 'ctag',
        deliveryTag: 1,
        redelivered: false,
        exchange: 'xd.dlx2',
        routingKey: 'to-q3',
        properties: { contentType: 'text/plain', deliveryMode: 2, headers },
        body: new TextEncoder().encode('hello'),
      }),
    ]),
  );
  if (f?.method !== 'basicDeliver') throw new Error('method');
  return f.basicDeliver.properties?.headers as FieldTable;
}

describe("RabbitMQ 3.10's x-death headers", () => {
  it('the fixture has dead-lettered stages', () => {
    expect(stages.filter(([name]) => name.includes('dead_letter')).length).toBeGreaterThanOrEqual(8);
  });

  it.each(
    stages,
  )('%s: round-trips with types and order, and converts to what amqplib decoded', (_name, stage) => {
    const headers = tableFromTyped(stage.properties_wire_typed.headers);
    const decoded = throughTheWire(headers);
    // Same types, same key order at every level (JSON keeps insertion order).
    expect(JSON.stringify(tableToTyped(decoded))).toBe(JSON.stringify(stage.properties_wire_typed.headers));
    const js = fieldTableToJs(decoded);
    expect(js).toEqual(stage.properties_amqplib.headers);
    expect(JSON.stringify(js)).toBe(JSON.stringify(stage.properties_amqplib.headers));
  });

  it('keeps x-death counts as signed 64-bit and times as timestamps', () => {
    const [, stage] = stages.find(([name]) => name === 'quorum after_second_dead_letter') as [string, Stage];
    const decoded = throughTheWire(tableFromTyped(stage.properties_wire_typed.headers));
    const xDeath = tableGet(decoded, 'x-death') as FieldValue;
    expect(fieldValueKind(xDeath)).toBe('array');
    const first = (xDeath as { array: { values: FieldValue[] } }).array.values[0] as { table: FieldTable };
    expect(fieldValueKind(tableGet(first.table, 'count') as FieldValue)).toBe('i64');
    expect(fieldValueKind(tableGet(first.table, 'time') as FieldValue)).toBe('timestamp');
  });
});
