/**
 * A structural check of metadata commands before they are applied. Commands come out of a log
 * (decoded from storage or the network), and `apply` must answer bad input with an error reply on
 * every replica rather than throw; this catches wrong field types up front so the handlers can
 * trust them. Deep validity of field tables is checked when they are copied (plainTable).
 */
import { ReplyCode } from '@styx/client/wire';
import { error } from './replies.ts';
import type { MetadataCommandType, MetadataError } from './types.ts';

type FieldSpec =
  | 'string'
  | 'boolean'
  /** A non-negative safe integer. */
  | 'count'
  /** Any safe integer. */
  | 'integer'
  /** A plain JSON object (not null, not an array). */
  | 'object'
  /** An object with an `entries` array. */
  | 'table'
  | 'string?'
  | 'boolean?'
  | 'strings'
  /** Absent, or an array of strings. */
  | 'strings?'
  | 'destinationKind';

const BINDING: Record<string, FieldSpec> = {
  vhost: 'string',
  source: 'string',
  destinationKind: 'destinationKind',
  destination: 'string',
  routingKey: 'string',
  arguments: 'table',
  connectionId: 'string?',
};

const SPECS: { readonly [K in MetadataCommandType]: Readonly<Record<string, FieldSpec>> } = {
  addVhost: { name: 'string' },
  // The redrive commands' nested objects are checked by redrive-ledger.ts.
  startRedrive: {
    id: 'string',
    user: 'string',
    vhost: 'string',
    queue: 'string',
    groupId: 'string',
    owner: 'string',
    dryRun: 'boolean',
    spec: 'object',
  },
  updateRedrive: { id: 'string', owner: 'string', state: 'string', progress: 'object', error: 'string?' },
  claimRedrive: { id: 'string', owner: 'string', previousOwner: 'string' },
  cancelRedrive: { id: 'string' },
  deleteVhost: { name: 'string' },
  putUser: { name: 'string', passwordHash: 'string', tags: 'strings' },
  deleteUser: { name: 'string' },
  setPermissions: { user: 'string', vhost: 'string', configure: 'string', write: 'string', read: 'string' },
  clearPermissions: { user: 'string', vhost: 'string' },
  declareExchange: {
    vhost: 'string',
    name: 'string',
    exchangeType: 'string',
    durable: 'boolean',
    autoDelete: 'boolean',
    internal: 'boolean',
    arguments: 'table',
  },
  deleteExchange: { vhost: 'string', name: 'string', ifUnused: 'boolean' },
  declareQueue: {
    vhost: 'string',
    name: 'string',
    durable: 'boolean',
    exclusiveOwner: 'string?',
    autoDelete: 'boolean',
    arguments: 'table',
    groupId: 'string',
    serverNamed: 'boolean?',
    node: 'string?',
    members: 'strings?',
    founders: 'strings?',
  },
  setQueueMembers: { vhost: 'string', name: 'string', groupId: 'string', members: 'strings' },
  deleteQueue: {
    vhost: 'string',
    name: 'string',
    ifUnused: 'boolean',
    ifEmpty: 'boolean',
    consumers: 'count',
    messages: 'count',
    connectionId: 'string?',
    groupId: 'string?',
  },
  bind: BINDING,
  unbind: BINDING,
  deleteExclusive: { connectionId: 'string' },
  setPolicy: {
    vhost: 'string',
    name: 'string',
    pattern: 'string',
    applyTo: 'string',
    priority: 'integer',
    definition: 'object',
  },
  clearPolicy: { vhost: 'string', name: 'string' },
  addClusterNode: { id: 'string', peerId: 'string', name: 'string', address: 'string' },
  forgetClusterNode: { node: 'string' },
  enableFeatureFlags: { names: 'strings' },
  setNodeMaintenance: { node: 'string', drained: 'boolean' },
};

function fits(spec: FieldSpec, v: unknown): boolean {
  switch (spec) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'count':
      return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    case 'table':
      return typeof v === 'object' && v !== null && Array.isArray((v as { entries?: unknown }).entries);
    case 'string?':
      return v == null || typeof v === 'string';
    case 'boolean?':
      return v == null || typeof v === 'boolean';
    case 'strings':
      return Array.isArray(v) && v.every((s) => typeof s === 'string');
    case 'strings?':
      return v == null || (Array.isArray(v) && v.every((s) => typeof s === 'string'));
    case 'destinationKind':
      return v === 'queue' || v === 'exchange';
  }
}

/** 503 COMMAND_INVALID for an unknown command type or a field of the wrong type; undefined if fine. */
export function checkCommandShape(command: unknown): MetadataError | undefined {
  if (typeof command !== 'object' || command === null) {
    return error(ReplyCode.COMMAND_INVALID, 'malformed metadata command: not an object');
  }
  const type = (command as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.hasOwn(SPECS, type)) {
    return error(ReplyCode.COMMAND_INVALID, `unknown metadata command '${String(type)}'`);
  }
  const specs = SPECS[type as MetadataCommandType];
  for (const field in specs) {
    const spec = specs[field] as FieldSpec;
    if (!fits(spec, (command as Record<string, unknown>)[field])) {
      return error(
        ReplyCode.COMMAND_INVALID,
        `malformed metadata command '${type}': bad field '${field}' (${spec})`,
      );
    }
  }
  return undefined;
}
