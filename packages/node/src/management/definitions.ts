/**
 * RabbitMQ's definitions JSON (`GET/POST /api/definitions`, `rabbitmqctl export_definitions`): the
 * export of a node's topology, and the checking of a file to import into a plan of changes.
 *
 * Export: vhosts, users (with `password_hash` and `hashing_algorithm`, as RabbitMQ exports them,
 * for an administrator only), permissions, policies, exchanges, queues and bindings, sorted by
 * vhost then name. Left out as RabbitMQ leaves them out: the default exchange and the `amq.*`
 * exchanges every vhost has, exclusive queues and their bindings, the default exchange's implicit
 * bindings; and server-named queues (`amq.gen-...`, which no import could declare again). Styx has no topic permissions, runtime parameters or limits: those lists are empty.
 *
 * Import (`parseDefinitions`): the whole file is checked before anything is changed, and every
 * problem is a DefinitionsError naming the item (`queues[3].arguments: ...`): unknown fields,
 * wrong types, exchange types, queue arguments and policy definitions Styx does not implement,
 * non-empty topic permissions, parameters or limits (which Styx would otherwise drop silently).
 * Vhost descriptions and tags, and the global parameters RabbitMQ keeps for itself
 * (`cluster_name`, `internal_cluster_id`), are accepted and not kept (reported in `ignored`).
 */
import type { FieldTable } from '@styx/client/wire';
import { jsToFieldTable } from '@styx/client/wire';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { namePatternProblem } from '../metadata/name-pattern.ts';
import { RESERVED_PREFIX } from '../metadata/names.ts';
import { hashPassword, isScryptHash, scryptHashProblem } from '../metadata/passwords.ts';
import { queueConfigFromArguments } from '../metadata/queue-arguments.ts';
import type { RabbitHashingAlgorithm } from '../metadata/rabbit-password-hashes.ts';
import {
  decodeRabbitHash,
  encodeRabbitHash,
  isRabbitHashingAlgorithm,
  LEGACY_RABBIT_ALGORITHM,
} from '../metadata/rabbit-password-hashes.ts';
import type {
  BindingRecord,
  DestinationKind,
  ExchangeRecord,
  MetadataCommand,
  PolicyRecord,
  QueueRecord,
  UserRecord,
} from '../metadata/types.ts';
import type { Json } from './views.ts';
import { argumentsJson } from './views.ts';

/** The `hashing_algorithm` Styx exports its own (scrypt) hashes under. */
export const STYX_HASHING_ALGORITHM = 'styx_password_hashing_scrypt';

/** The global parameters RabbitMQ writes about itself; meaningless to Styx, so not kept. */
const IGNORED_GLOBAL_PARAMETERS = ['cluster_name', 'internal_cluster_id'];

/** A definitions file Styx cannot import as it is; `reason` names the item and the problem. */
export class DefinitionsError extends Error {
  readonly code = 'DEFINITIONS_INVALID';
  constructor(reason: string) {
    super(reason);
    this.name = 'DefinitionsError';
  }
}

// ---------------------------------------------------------------------------------------- plan

/** A user to put, its hash as the user record stores it. */
export type PlannedUser = UserRecord;
/** A permission entry to set, as the metadata command takes it. */
export type PlannedPermission = Omit<Extract<MetadataCommand, { type: 'setPermissions' }>, 'type'>;
/** A policy to set, its definition still to be checked by the metadata machine. */
export type PlannedPolicy = Omit<Extract<MetadataCommand, { type: 'setPolicy' }>, 'type'>;
/** An exchange to declare, its type still to be checked by the metadata machine. */
export type PlannedExchange = Omit<ExchangeRecord, 'type'> & { readonly type: string };
export type PlannedQueue = Pick<QueueRecord, 'vhost' | 'name' | 'durable' | 'autoDelete' | 'arguments'>;
/** A binding to make, and where it was in the file, for messages (`bindings[4]`). */
export type PlannedBinding = BindingRecord & { readonly item: string };

/** What an import changes, in the order it is applied. */
export interface ImportPlan {
  readonly vhosts: readonly string[];
  readonly users: readonly PlannedUser[];
  readonly permissions: readonly PlannedPermission[];
  readonly policies: readonly PlannedPolicy[];
  readonly exchanges: readonly PlannedExchange[];
  readonly queues: readonly PlannedQueue[];
  readonly bindings: readonly PlannedBinding[];
  /** What the file held that Styx accepts but does not keep. */
  readonly ignored: readonly string[];
}

// ---------------------------------------------------------------------------------------- reading

type Obj = Readonly<Record<string, unknown>>;

/** Reads one item of the file, every problem prefixed with where it is. */
class Item {
  readonly where: string;
  readonly value: Obj;

  constructor(where: string, value: Obj) {
    this.where = where;
    this.value = value;
  }

  static of(where: string, value: unknown, known: readonly string[]): Item {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new DefinitionsError(`${where}: must be a JSON object`);
    }
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        throw new DefinitionsError(`${where}: unknown field '${key}' (known: ${known.join(', ')})`);
      }
    }
    return new Item(where, value as Obj);
  }

  fail(problem: string): never {
    throw new DefinitionsError(`${this.where}: ${problem}`);
  }

  string(key: string, fallback?: string): string {
    const v = this.value[key] ?? fallback;
    if (typeof v !== 'string') this.fail(`'${key}' must be a string`);
    return v;
  }

  /** A regular expression the linear-time engine runs (metadata/name-pattern.ts). */
  pattern(key: string): string {
    const v = this.string(key);
    const problem = namePatternProblem(v);
    if (problem !== undefined) this.fail(`'${key}': ${problem.message}`);
    return v;
  }

  name(key: string): string {
    const v = this.string(key);
    if (v === '') this.fail(`'${key}' must not be empty`);
    return v;
  }

  boolean(key: string, fallback: boolean): boolean {
    const v = this.value[key] ?? fallback;
    if (typeof v !== 'boolean') this.fail(`'${key}' must be true or false`);
    return v;
  }

  object(key: string): Obj {
    const v = this.value[key] ?? {};
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(`'${key}' must be a JSON object`);
    return v as Obj;
  }

  table(key: string): FieldTable {
    try {
      return jsToFieldTable(this.object(key) as Record<string, unknown>);
    } catch (err) {
      return this.fail(`'${key}': ${(err as Error).message}`);
    }
  }

  /** RabbitMQ's tags: a comma-separated string, or (3.9+) an array of strings. */
  tags(key: string): string[] {
    const v = this.value[key] ?? [];
    const list = typeof v === 'string' ? v.split(',') : v;
    if (!Array.isArray(list) || !list.every((t) => typeof t === 'string')) {
      this.fail(`'${key}' must be a comma-separated string or an array of strings`);
    }
    return [...new Set(list.map((t) => t.trim()).filter((t) => t !== ''))];
  }

  /** Limits Styx does not enforce: only an empty list or object is accepted. */
  noLimits(key: string): void {
    const v = this.value[key];
    if (v === undefined) return;
    const empty = Array.isArray(v)
      ? v.length === 0
      : typeof v === 'object' && v !== null && Object.keys(v).length === 0;
    if (!empty) this.fail(`'${key}': Styx has no ${key} (only an empty list or object can be imported)`);
  }
}

/** The list under `key` (absent: empty), each element an Item with `known` fields. */
function items(file: Obj, key: string, known: readonly string[]): Item[] {
  const list = file[key];
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new DefinitionsError(`'${key}' must be a list`);
  return list.map((value, i) => Item.of(`${key}[${i}]`, value, known));
}

const VERSION_FIELDS = [
  'rabbit_version',
  'rabbitmq_version',
  'product_name',
  'product_version',
  'rabbitmq_definition_format',
  'original_cluster_name',
  'explanation',
];
const TOPOLOGY_FIELDS = ['parameters', 'policies', 'queues', 'exchanges', 'bindings'];
const BROKER_FIELDS = ['users', 'vhosts', 'permissions', 'topic_permissions', 'global_parameters'];

const USER_FIELDS = ['name', 'password_hash', 'hashing_algorithm', 'tags', 'limits', 'password'];
const VHOST_FIELDS = ['name', 'limits', 'metadata', 'description', 'tags', 'default_queue_type', 'tracing'];
const PERMISSION_FIELDS = ['user', 'vhost', 'configure', 'write', 'read'];
const POLICY_FIELDS = ['vhost', 'name', 'pattern', 'apply-to', 'definition', 'priority'];
const EXCHANGE_FIELDS = ['vhost', 'name', 'type', 'durable', 'auto_delete', 'internal', 'arguments'];
const QUEUE_FIELDS = ['vhost', 'name', 'type', 'durable', 'auto_delete', 'arguments'];
const BINDING_FIELDS = ['vhost', 'source', 'destination', 'destination_type', 'routing_key', 'arguments'];

/**
 * Check a definitions file and turn it into an ImportPlan. `vhost` given: the file is one vhost's
 * (`/api/definitions/{vhost}`): its items go to that vhost whatever `vhost` they name, and it holds
 * no users, vhosts or permissions. Passwords given in clear (`password`) are hashed with scrypt here.
 */
export async function parseDefinitions(body: unknown, vhost?: string): Promise<ImportPlan> {
  const known = [...VERSION_FIELDS, ...TOPOLOGY_FIELDS, ...(vhost === undefined ? BROKER_FIELDS : [])];
  const file = Item.of('definitions', body, known).value;
  const ignored: string[] = [];
  // Into a vhost, the target decides (RabbitMQ's vhost export keeps `vhost` on policies, and one
  // vhost's definitions are imported into another to copy it): an item's own `vhost` is ignored.
  const vhostOf = (item: Item): string => {
    if (vhost === undefined) return item.string('vhost');
    if (item.value.vhost !== undefined) item.string('vhost');
    return vhost;
  };

  const vhosts = items(file, 'vhosts', VHOST_FIELDS).map((item: Item) => {
    item.noLimits('limits');
    if (
      item.value.metadata !== undefined ||
      item.value.description !== undefined ||
      item.value.tags !== undefined
    ) {
      ignored.push(`${item.where}: description and tags (Styx vhosts have none)`);
    }
    return item.name('name');
  });

  const users: PlannedUser[] = [];
  for (const item of items(file, 'users', USER_FIELDS)) {
    item.noLimits('limits');
    users.push({ name: item.name('name'), passwordHash: await userHash(item), tags: item.tags('tags') });
  }

  const permissions = items(file, 'permissions', PERMISSION_FIELDS).map((item: Item) => ({
    user: item.name('user'),
    vhost: item.name('vhost'),
    configure: item.pattern('configure'),
    write: item.pattern('write'),
    read: item.pattern('read'),
  }));
  for (const item of items(file, 'topic_permissions', ['user', 'vhost', 'exchange', 'write', 'read'])) {
    item.fail('Styx has no topic permissions (only an empty topic_permissions list can be imported)');
  }
  for (const item of items(file, 'parameters', ['vhost', 'component', 'name', 'value'])) {
    item.fail(`Styx has no runtime parameters ('${String(item.value.component)}')`);
  }
  for (const item of items(file, 'global_parameters', ['name', 'value'])) {
    const name = item.string('name');
    if (!IGNORED_GLOBAL_PARAMETERS.includes(name)) item.fail(`Styx has no global parameter '${name}'`);
    ignored.push(`${item.where}: global parameter '${name}'`);
  }

  const policies = items(file, 'policies', POLICY_FIELDS).map((item: Item) => {
    const priority: unknown = item.value.priority ?? 0;
    if (typeof priority !== 'number' || !Number.isSafeInteger(priority))
      item.fail("'priority' must be an integer");
    return {
      vhost: vhostOf(item),
      name: item.name('name'),
      pattern: item.pattern('pattern'),
      applyTo: item.string('apply-to', 'all'),
      priority,
      definition: item.object('definition'),
    };
  });

  const exchanges = items(file, 'exchanges', EXCHANGE_FIELDS).map((item: Item) => ({
    vhost: vhostOf(item),
    name: item.name('name'),
    type: item.string('type'),
    durable: item.boolean('durable', true),
    autoDelete: item.boolean('auto_delete', false),
    internal: item.boolean('internal', false),
    arguments: item.table('arguments'),
  }));

  const queues = items(file, 'queues', QUEUE_FIELDS).map((item: Item) => {
    const durable = item.boolean('durable', true);
    const type = item.string('type', 'classic');
    let args = item.table('arguments');
    // The type RabbitMQ 3.10 lists apart: kept as the argument a client would have declared.
    if (type !== 'classic' && args.entries.every((e) => e.key !== 'x-queue-type')) {
      args = { entries: [...args.entries, { key: 'x-queue-type', value: { longStr: type } }] };
    }
    const name = item.name('name');
    const queueVhost = vhostOf(item);
    const parsed = queueConfigFromArguments(args, durable, { vhost: queueVhost, name });
    if (!parsed.ok) item.fail(parsed.text);
    return {
      vhost: queueVhost,
      name,
      durable,
      autoDelete: item.boolean('auto_delete', false),
      arguments: args,
    };
  });

  const bindings = items(file, 'bindings', BINDING_FIELDS).map((item: Item) => {
    const kind = item.string('destination_type');
    if (kind !== 'queue' && kind !== 'exchange')
      item.fail("'destination_type' must be 'queue' or 'exchange'");
    return {
      vhost: vhostOf(item),
      source: item.string('source'),
      destinationKind: kind as DestinationKind,
      destination: item.string('destination'),
      routingKey: item.string('routing_key', ''),
      arguments: item.table('arguments'),
      item: item.where,
    };
  });

  return { vhosts, users, permissions, policies, exchanges, queues, bindings, ignored };
}

/** The stored hash of an imported user: RabbitMQ's (verified as RabbitMQ does), Styx's, or new. */
async function userHash(item: Item): Promise<string> {
  if (item.value.password !== undefined) {
    if (item.value.password_hash !== undefined) item.fail("give 'password' or 'password_hash', not both");
    const password = item.name('password');
    return hashPassword(password);
  }
  const hash = item.string('password_hash');
  const algorithm = item.string('hashing_algorithm', LEGACY_RABBIT_ALGORITHM);
  // RabbitMQ's passwordless user (login only through another mechanism): no password matches.
  if (hash === '') return '';
  if (algorithm === STYX_HASHING_ALGORITHM) {
    if (!isScryptHash(hash)) item.fail(`'password_hash' is not a ${STYX_HASHING_ALGORITHM} hash`);
    // Every login pays the hash's cost: parameters past what the node affords are refused here,
    // not discovered at the first login (which would then fail, see passwords.ts).
    const problem = scryptHashProblem(hash);
    if (problem !== undefined) item.fail(`user '${item.name('name')}': 'password_hash': ${problem}`);
    return hash;
  }
  if (!isRabbitHashingAlgorithm(algorithm)) {
    item.fail(
      `'hashing_algorithm' '${algorithm}' is not one Styx can verify (rabbit_password_hashing_sha256, rabbit_password_hashing_sha512, rabbit_password_hashing_md5, ${STYX_HASHING_ALGORITHM})`,
    );
  }
  const encoded = encodeRabbitHash(algorithm, hash);
  if (!encoded.ok) item.fail(`'password_hash': ${encoded.reason}`);
  return encoded.encoded;
}

// ---------------------------------------------------------------------------------------- export

/** A user's hash as RabbitMQ's export fields. */
function exportedHash(user: UserRecord): { password_hash: string; hashing_algorithm: string } {
  const rabbit = decodeRabbitHash(user.passwordHash);
  if (rabbit !== undefined) return { password_hash: rabbit.hash, hashing_algorithm: rabbit.algorithm };
  if (user.passwordHash === '') {
    const algorithm: RabbitHashingAlgorithm = 'rabbit_password_hashing_sha256';
    return { password_hash: '', hashing_algorithm: algorithm };
  }
  return { password_hash: user.passwordHash, hashing_algorithm: STYX_HASHING_ALGORITHM };
}

function byName<T extends { readonly name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Created with every vhost: never exported, never imported (declaring them is refused). */
function isStandardExchange(name: string): boolean {
  return name === '' || name.startsWith('amq.');
}

function policyDefinitionJson(p: PolicyRecord): Json {
  return {
    vhost: p.vhost,
    name: p.name,
    pattern: p.pattern,
    'apply-to': p.applyTo,
    definition: { ...p.definition } as { [key: string]: Json },
    priority: p.priority,
  };
}

/** The topology of `vhosts`; `withVhost` puts each item's vhost in it (a whole-node export). */
function topology(
  metadata: MetadataMachine,
  vhosts: readonly string[],
  withVhost: boolean,
): { [key: string]: Json } {
  const policies: Json[] = [];
  const exchanges: Json[] = [];
  const queues: Json[] = [];
  const bindings: Json[] = [];
  const where = (vhost: string): { [key: string]: Json } => (withVhost ? { vhost } : {});
  for (const vhost of vhosts) {
    // RabbitMQ's vhost export keeps `vhost` on policies (only there).
    for (const p of metadata.policies(vhost).sort(byName)) policies.push(policyDefinitionJson(p));
    for (const x of metadata.exchanges(vhost).sort(byName)) {
      if (isStandardExchange(x.name)) continue;
      exchanges.push({
        name: x.name,
        ...where(vhost),
        type: x.type,
        durable: x.durable,
        auto_delete: x.autoDelete,
        internal: x.internal,
        arguments: argumentsJson(x.arguments),
      });
    }
    // Exclusive queues die with their connection; server-named ones (`amq.gen-...`) belong to the
    // client that declared them and cannot be declared by name again (the `amq.` prefix is
    // reserved): neither is topology to export, nor are their bindings.
    const leftOut = new Set<string>();
    for (const q of metadata.queues(vhost).sort(byName)) {
      if (q.exclusiveOwner !== undefined || q.name.startsWith(RESERVED_PREFIX)) {
        leftOut.add(q.name);
        continue;
      }
      queues.push({
        name: q.name,
        ...where(vhost),
        durable: q.durable,
        auto_delete: q.autoDelete,
        arguments: argumentsJson(q.arguments),
      });
    }
    for (const b of metadata.bindings(vhost)) {
      if (b.destinationKind === 'queue' && leftOut.has(b.destination)) continue;
      bindings.push({
        source: b.source,
        ...where(vhost),
        destination: b.destination,
        destination_type: b.destinationKind,
        routing_key: b.routingKey,
        arguments: argumentsJson(b.arguments),
      });
    }
  }
  return { parameters: [], policies, queues, exchanges, bindings };
}

/** `GET /api/definitions`: the whole node. */
export function exportDefinitions(metadata: MetadataMachine, version: string | null): Json {
  const vhosts = metadata
    .vhosts()
    .map((v) => v.name)
    .sort();
  const permissions = metadata
    .allPermissions()
    .sort((a, b) => (a.vhost < b.vhost ? -1 : a.vhost > b.vhost ? 1 : a.user < b.user ? -1 : 1))
    .map((p) => ({ user: p.user, vhost: p.vhost, configure: p.configure, write: p.write, read: p.read }));
  return {
    rabbit_version: version,
    rabbitmq_version: version,
    product_name: 'Styx',
    product_version: version,
    users: metadata
      .users()
      .sort(byName)
      .map((u) => ({ name: u.name, ...exportedHash(u), tags: [...u.tags], limits: {} })),
    vhosts: vhosts.map((name) => ({ name, limits: [], metadata: { description: '', tags: [] } })),
    permissions,
    topic_permissions: [],
    global_parameters: [],
    ...topology(metadata, vhosts, true),
  };
}

/** `GET /api/definitions/{vhost}`: one vhost's topology, its items without `vhost`. */
export function exportVhostDefinitions(
  metadata: MetadataMachine,
  vhost: string,
  version: string | null,
): Json {
  return { rabbit_version: version, rabbitmq_version: version, ...topology(metadata, [vhost], false) };
}
