/**
 * The management API's definitions endpoints, as RabbitMQ's (administrators only):
 *
 *   GET  /api/definitions            the whole node's topology with users and permissions
 *   POST /api/definitions            import such a file (RabbitMQ's, 3.6 and later, or Styx's own)
 *   GET  /api/definitions/{vhost}    one vhost's topology
 *   POST /api/definitions/{vhost}    import one vhost's topology into that vhost
 *
 * An import is all-or-nothing as far as the file decides it: the file is checked whole
 * (definitions.ts), then every change it makes is tried, in order, on a copy of the metadata
 * state (the same machine that applies the real commands, so it refuses exactly what the real
 * apply would: an exchange or queue that exists with other properties, a permission for a user
 * neither in the file nor on the node, a policy definition Styx does not implement...), and only
 * when all pass is anything applied, through the broker, as a client's declares would be (actors
 * started, replicas placed, policies applied to queues). What the trial cannot foresee (the
 * cluster losing its metadata leader midway) stops the import with what was done reported.
 *
 * A binding whose source or destination is neither in the file nor on the node is skipped and
 * reported (RabbitMQ skips it too): RabbitMQ 3.10's export leaves internal exchanges out but keeps
 * their bindings, so its own files hold such bindings. What is already there as the file has it is
 * left alone, so importing the same file again changes nothing (and proposes nothing).
 *
 * The reply is 200 with the counts imported and unchanged per kind, and what was skipped and
 * ignored (RabbitMQ answers 204; its clients accept any 2xx).
 */
import { ReplyCode, tableGet } from '@styx/client/wire';
import type { Broker, Session } from '../broker/broker.ts';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { MetadataCommand, UserRecord } from '../metadata/types.ts';
import { ApiError, badRequest, fromBrokerError, fromMetadataError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import type { ImportPlan, PlannedBinding } from './definitions.ts';
import {
  DefinitionsError,
  exportDefinitions,
  exportVhostDefinitions,
  parseDefinitions,
} from './definitions.ts';
import type { Json } from './views.ts';

/** A binding the import left out, and why. */
interface Skipped {
  readonly item: string;
  readonly reason: string;
}

function declareCommands(plan: ImportPlan): { command: MetadataCommand; item: string }[] {
  const numbered = <T>(kind: string, list: readonly T[], command: (x: T, i: number) => MetadataCommand) =>
    list.map((x, i) => ({ command: command(x, i), item: `${kind}[${i}]` }));
  return [
    ...numbered('vhosts', plan.vhosts, (name) => ({ type: 'addVhost', name })),
    ...numbered('users', plan.users, (u) => ({
      type: 'putUser',
      name: u.name,
      passwordHash: u.passwordHash,
      tags: u.tags,
    })),
    ...numbered('permissions', plan.permissions, (p) => ({ type: 'setPermissions', ...p })),
    ...numbered('policies', plan.policies, (p) => ({ type: 'setPolicy', ...p })),
    ...numbered('exchanges', plan.exchanges, (x) => ({
      type: 'declareExchange',
      vhost: x.vhost,
      name: x.name,
      exchangeType: x.type,
      durable: x.durable,
      autoDelete: x.autoDelete,
      internal: x.internal,
      arguments: x.arguments,
    })),
    ...numbered('queues', plan.queues, (q, i) => ({
      type: 'declareQueue',
      vhost: q.vhost,
      name: q.name,
      durable: q.durable,
      exclusiveOwner: undefined,
      autoDelete: q.autoDelete,
      arguments: q.arguments,
      // Only the trial applies this command; the real declare makes the queue's group id.
      groupId: `trial/${i}`,
    })),
  ];
}

function bindCommand(b: PlannedBinding): MetadataCommand {
  return {
    type: 'bind',
    vhost: b.vhost,
    source: b.source,
    destinationKind: b.destinationKind,
    destination: b.destination,
    routingKey: b.routingKey,
    arguments: b.arguments,
  };
}

/** What an import counts, per kind. */
type Kind = 'vhosts' | 'users' | 'permissions' | 'policies' | 'exchanges' | 'queues' | 'bindings';
type Counts = { [kind in Kind]: number };

/** The kind each command of an import counts as (also the order they are applied in). */
const KIND_OF: Partial<Record<MetadataCommand['type'], Kind>> = {
  addVhost: 'vhosts',
  putUser: 'users',
  setPermissions: 'permissions',
  setPolicy: 'policies',
  declareExchange: 'exchanges',
  declareQueue: 'queues',
  bind: 'bindings',
};

function zero(): Counts {
  return { vhosts: 0, users: 0, permissions: 0, policies: 0, exchanges: 0, queues: 0, bindings: 0 };
}

/**
 * Whether `command` would change what `state` holds. Declares, binds and vhosts say so in their
 * reply (`created`); users, permissions and policies are replaced, so they are compared.
 */
function changes(state: MetadataMachine, command: MetadataCommand): boolean | undefined {
  switch (command.type) {
    case 'putUser': {
      const u = state.user(command.name);
      return (
        u === undefined || u.passwordHash !== command.passwordHash || u.tags.join() !== command.tags.join()
      );
    }
    case 'setPermissions': {
      const p = state.permissions(command.user, command.vhost);
      return (
        p === undefined ||
        p.configure !== command.configure ||
        p.write !== command.write ||
        p.read !== command.read
      );
    }
    case 'setPolicy': {
      const p = state.policy(command.vhost, command.name);
      return (
        p === undefined ||
        p.pattern !== command.pattern ||
        p.applyTo !== command.applyTo ||
        p.priority !== command.priority ||
        JSON.stringify(p.definition) !== JSON.stringify(command.definition)
      );
    }
    default:
      return undefined;
  }
}

/** The outcome of the trial: the commands that change something, and what was left out. */
interface Trial {
  readonly changes: { readonly command: MetadataCommand; readonly kind: Kind }[];
  readonly unchanged: Counts;
  readonly skipped: Skipped[];
}

/**
 * Try the whole plan on a copy of `metadata`: 400 naming the first item refused. The bindings
 * whose ends do not exist are skipped; commands that would change nothing (a re-import) are left
 * out of what is applied.
 */
function trial(metadata: MetadataMachine, plan: ImportPlan): Trial {
  const copy = new MetadataMachine();
  copy.restore(metadata.snapshot());
  const commands = [
    ...declareCommands(plan),
    ...plan.bindings.map((b) => ({ command: bindCommand(b), item: b.item })),
  ];
  const out: Trial = { changes: [], unchanged: zero(), skipped: [] };
  for (const { command, item } of commands) {
    const kind = KIND_OF[command.type] as Kind;
    const changed = changes(copy, command);
    const reply = copy.apply(command);
    if (reply.type === 'error') {
      if (command.type !== 'bind' || reply.code !== ReplyCode.NOT_FOUND)
        throw badRequest(`${item}: ${reply.text}`);
      out.skipped.push({ item, reason: reply.text });
    } else if (changed ?? reply.created) out.changes.push({ command, kind });
    else out.unchanged[kind] += 1;
  }
  return out;
}

export function definitionsRoutes(broker: Broker): Route[] {
  const version = (): string | null => tableGet(broker.serverProperties, 'version')?.longStr ?? null;
  const existingVhost = (request: ApiRequest): string => {
    const vhost = request.params[0] as string;
    if (broker.metadataView.vhost(vhost) === undefined) throw notFound(`no vhost '${vhost}'`);
    return vhost;
  };

  const importPlan = async (request: ApiRequest, vhost: string | undefined): Promise<ApiResponse> => {
    let plan: ImportPlan;
    try {
      plan = await parseDefinitions(await request.body(), vhost);
    } catch (err) {
      if (err instanceof DefinitionsError) throw badRequest(err.message);
      throw err;
    }
    const trialled = trial(broker.metadataView, plan);
    const done = await apply(broker, request.user, trialled);
    broker.logger.info(
      { user: request.user.name, vhost, ...done, skipped: trialled.skipped.length },
      'definitions imported',
    );
    return {
      status: 200,
      body: {
        imported: done,
        unchanged: trialled.unchanged,
        skipped: trialled.skipped.map((s) => ({ ...s })),
        ignored: [...plan.ignored],
      },
    };
  };

  return [
    {
      path: ['definitions'],
      methods: {
        GET: () => {
          return { status: 200, body: exportDefinitions(broker.metadataView, version()) };
        },
        POST: (request) => {
          return importPlan(request, undefined);
        },
      },
    },
    {
      path: ['definitions', ':vhost'],
      methods: {
        GET: (request) => {
          return {
            status: 200,
            body: exportVhostDefinitions(broker.metadataView, existingVhost(request), version()),
          };
        },
        POST: (request) => {
          return importPlan(request, existingVhost(request));
        },
      },
    },
  ];
}

/** Changes of one kind applied at once, at most: the metadata log commits a batch of them together. */
const CONCURRENCY = 32;

/**
 * Apply the changes a trial passed, kind by kind in the file's order (vhosts, users, permissions,
 * policies, exchanges, queues, bindings), each kind's changes CONCURRENCY at a time: metadata
 * changes through `Broker.manage`, declares and binds as the broker's own (a trusted session: the
 * file, not the administrator's permissions, decides). A failure stops the import there; the reply
 * says what was applied.
 */
async function apply(broker: Broker, user: UserRecord, trialled: Trial): Promise<Counts> {
  const done = zero();
  const session = (vhost: string): Session => ({
    user: user.name,
    vhost,
    connectionId: `management:${broker.nodeName}`,
    trusted: true,
  });
  const run = async (command: MetadataCommand): Promise<void> => {
    switch (command.type) {
      case 'declareExchange':
        return broker.declareExchange(session(command.vhost), {
          exchange: command.name,
          type: command.exchangeType,
          passive: false,
          durable: command.durable,
          autoDelete: command.autoDelete,
          internal: command.internal,
          arguments: command.arguments,
        });
      case 'declareQueue':
        await broker.declareQueue(session(command.vhost), {
          queue: command.name,
          passive: false,
          durable: command.durable,
          exclusive: false,
          autoDelete: command.autoDelete,
          arguments: command.arguments,
        });
        return;
      case 'bind':
        return broker.bind(
          session(command.vhost),
          command.destinationKind,
          command.destination,
          command.source,
          command.routingKey,
          command.arguments,
        );
      default: {
        const reply = await broker.manage(command);
        if (reply.type === 'error') throw fromMetadataError(reply);
      }
    }
  };
  try {
    for (const kind of Object.values(KIND_OF) as Kind[]) {
      const pending = trialled.changes.filter((c) => c.kind === kind);
      for (let i = 0; i < pending.length; i += CONCURRENCY) {
        const batch = pending.slice(i, i + CONCURRENCY);
        const results = await Promise.allSettled(batch.map((c) => run(c.command)));
        for (const r of results) if (r.status === 'fulfilled') done[kind] += 1;
        const failed = results.find((r) => r.status === 'rejected');
        if (failed !== undefined) throw failed.reason;
      }
    }
  } catch (err) {
    const mapped = err instanceof ApiError ? err : fromBrokerError(err);
    if (!(mapped instanceof ApiError)) throw mapped;
    throw new ApiError(
      mapped.status,
      mapped.code,
      `the import stopped after ${JSON.stringify(done)}: ${mapped.message}`,
    );
  }
  return done;
}

export type { Json };
