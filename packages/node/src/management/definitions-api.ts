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
 * their bindings, so its own files hold such bindings. Importing the same file again changes
 * nothing (every change is a redeclare of what is there).
 *
 * The reply is 200 with what was imported, skipped and ignored (RabbitMQ answers 204; its clients
 * accept any 2xx).
 */
import { ReplyCode, tableGet } from '@styx/client/wire';
import type { Broker, Session } from '../broker/broker.ts';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { MetadataCommand, UserRecord } from '../metadata/types.ts';
import { ADMINISTRATOR, requireTag } from './access.ts';
import { ApiError, badRequest, fromBrokerError, fromMetadataError, notFound } from './api-error.ts';
import type { ImportPlan, PlannedBinding } from './definitions.ts';
import {
  DefinitionsError,
  exportDefinitions,
  exportVhostDefinitions,
  parseDefinitions,
} from './definitions.ts';
import type { ApiRequest, ApiResponse, Route } from './management-api.ts';
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

/**
 * Try the whole plan on a copy of `metadata`: 400 naming the first item refused; the bindings
 * whose ends do not exist are returned as skipped (and left out of what is applied).
 */
function trial(
  metadata: MetadataMachine,
  plan: ImportPlan,
): { bindings: PlannedBinding[]; skipped: Skipped[] } {
  const copy = new MetadataMachine();
  copy.restore(metadata.snapshot());
  for (const { command, item } of declareCommands(plan)) {
    const reply = copy.apply(command);
    if (reply.type === 'error') throw badRequest(`${item}: ${reply.text}`);
  }
  const bindings: PlannedBinding[] = [];
  const skipped: Skipped[] = [];
  for (const b of plan.bindings) {
    const reply = copy.apply(bindCommand(b));
    if (reply.type === 'ok') bindings.push(b);
    else if (reply.code === ReplyCode.NOT_FOUND) skipped.push({ item: b.item, reason: reply.text });
    else throw badRequest(`${b.item}: ${reply.text}`);
  }
  return { bindings, skipped };
}

export function definitionsRoutes(broker: Broker): Route[] {
  const version = (): string | null => tableGet(broker.serverProperties, 'version')?.longStr ?? null;
  const admin = (request: ApiRequest): void => requireTag(request.user, [ADMINISTRATOR]);
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
    const { bindings, skipped } = trial(broker.metadataView, plan);
    const done = await apply(broker, request.user, { ...plan, bindings });
    broker.logger.info(
      { user: request.user.name, vhost, ...done, skipped: skipped.length },
      'definitions imported',
    );
    return {
      status: 200,
      body: {
        imported: done,
        skipped: skipped.map((s) => ({ ...s })),
        ignored: [...plan.ignored],
      },
    };
  };

  return [
    {
      path: ['definitions'],
      methods: {
        GET: (request) => {
          admin(request);
          return { status: 200, body: exportDefinitions(broker.metadataView, version()) };
        },
        POST: (request) => {
          admin(request);
          return importPlan(request, undefined);
        },
      },
    },
    {
      path: ['definitions', ':vhost'],
      methods: {
        GET: (request) => {
          admin(request);
          return {
            status: 200,
            body: exportVhostDefinitions(broker.metadataView, existingVhost(request), version()),
          };
        },
        POST: (request) => {
          admin(request);
          return importPlan(request, existingVhost(request));
        },
      },
    },
  ];
}

/** Counts of what an import applied, per kind. */
type Done = {
  [kind in 'vhosts' | 'users' | 'permissions' | 'policies' | 'exchanges' | 'queues' | 'bindings']: number;
};

/** What each metadata command of an import counts as. */
const MANAGED: Partial<Record<MetadataCommand['type'], keyof Done>> = {
  addVhost: 'vhosts',
  putUser: 'users',
  setPermissions: 'permissions',
  setPolicy: 'policies',
};

/**
 * Apply a plan the trial passed: metadata changes through `Broker.manage`, declares and binds as
 * the broker's own (a trusted session: the file, not the administrator's permissions, decides).
 */
async function apply(broker: Broker, user: UserRecord, plan: ImportPlan): Promise<Done> {
  const done: Done = {
    vhosts: 0,
    users: 0,
    permissions: 0,
    policies: 0,
    exchanges: 0,
    queues: 0,
    bindings: 0,
  };
  const session = (vhost: string): Session => ({
    user: user.name,
    vhost,
    connectionId: `management:${broker.nodeName}`,
    trusted: true,
  });
  const step = async (kind: keyof Done, operation: () => Promise<void>): Promise<void> => {
    try {
      await operation();
    } catch (err) {
      const mapped = err instanceof ApiError ? err : fromBrokerError(err);
      const reason = `the import stopped after ${JSON.stringify(done)}: ${(mapped as Error).message}`;
      throw mapped instanceof ApiError ? new ApiError(mapped.status, mapped.code, reason) : mapped;
    }
    done[kind] += 1;
  };
  const manage = async (command: MetadataCommand): Promise<void> => {
    const reply = await broker.manage(command);
    if (reply.type === 'error') throw fromMetadataError(reply);
  };
  for (const { command } of declareCommands(plan)) {
    switch (command.type) {
      case 'declareExchange':
        await step('exchanges', () =>
          broker.declareExchange(session(command.vhost), {
            exchange: command.name,
            type: command.exchangeType,
            passive: false,
            durable: command.durable,
            autoDelete: command.autoDelete,
            internal: command.internal,
            arguments: command.arguments,
          }),
        );
        break;
      case 'declareQueue':
        await step('queues', async () => {
          await broker.declareQueue(session(command.vhost), {
            queue: command.name,
            passive: false,
            durable: command.durable,
            exclusive: false,
            autoDelete: command.autoDelete,
            arguments: command.arguments,
          });
        });
        break;
      default:
        await step(MANAGED[command.type] as keyof Done, () => manage(command));
    }
  }
  for (const b of plan.bindings) {
    await step('bindings', () =>
      broker.bind(session(b.vhost), b.destinationKind, b.destination, b.source, b.routingKey, b.arguments),
    );
  }
  return done;
}

export type { Json };
