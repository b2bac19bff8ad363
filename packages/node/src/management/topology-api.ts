/**
 * The management API's topology changes and binding lists, shaped like RabbitMQ's:
 *
 *   PUT DELETE  /api/exchanges/{vhost}/{name}       {type, durable?, auto_delete?, internal?, arguments?}
 *                                                   DELETE takes ?if-unused=true
 *   GET         /api/exchanges/{vhost}/{name}/bindings/source | /destination
 *   PUT DELETE  /api/queues/{vhost}/{name}          {durable?, auto_delete?, arguments?}
 *                                                   DELETE takes ?if-empty=true&if-unused=true
 *   DELETE      /api/queues/{vhost}/{name}/contents (purge)
 *   GET         /api/queues/{vhost}/{name}/bindings
 *   GET POST    /api/bindings/{vhost}/e/{source}/q/{queue}      POST {routing_key?, arguments?}: 201,
 *                                                   Location: {queue}/{props}
 *   GET POST    /api/bindings/{vhost}/e/{source}/e/{exchange}   (exchange-to-exchange bindings)
 *   GET DELETE  /api/bindings/{vhost}/e/{source}/{q|e}/{destination}/{props}
 *
 * Every change runs as the AMQP operation would for the requesting user (the broker's declare,
 * delete, bind and purge with a session of that user in that vhost), so it needs the same
 * permission regexes: configure to declare or delete, write on the destination and read on the
 * source to bind or unbind, read to purge; an administrator needs them too, as in RabbitMQ. A
 * vhost the user cannot see answers 404 as if missing. PUT answers 201 when it created the
 * exchange or queue and 204 when an equivalent one was there (an inequivalent one: 400); DELETE
 * 204, or 404 when there was nothing. `amq.default` in a path is the default exchange ''.
 */
import type { FieldTable } from '@styx/client/wire';
import { jsToFieldTable } from '@styx/client/wire';
import type { Broker, Session } from '../broker/broker.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { BindingRecord, DestinationKind, QueueRecord, UserRecord } from '../metadata/types.ts';
import { ApiError, badRequest, fromBrokerError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import { bindingPropertiesKey } from './binding-props.ts';
import { exchangeFromPath } from './exchange-path.ts';
import type { BodyObject } from './request-body.ts';
import {
  objectBody,
  onlyFields,
  optionalBoolean,
  optionalObject,
  optionalString,
  requiredString,
} from './request-body.ts';
import type { Json } from './views.ts';
import { bindingJson, defaultBindingJson } from './views.ts';

const CREATED: ApiResponse = { status: 201 };
const NO_CONTENT: ApiResponse = { status: 204 };

/**
 * The fields a body may have: what the endpoint takes, plus those of RabbitMQ's own representation
 * of the object that its clients send along (rabbitmqadmin and rabbit-hole put `name`, `vhost`,
 * the binding's ends...), ignored. Anything else is a 400: a typo must not pass silently.
 */
const EXCHANGE_FIELDS = ['type', 'durable', 'auto_delete', 'internal', 'arguments', 'vhost', 'name'];
const QUEUE_FIELDS = ['durable', 'auto_delete', 'arguments', 'vhost', 'name', 'node', 'type'];
const BINDING_FIELDS = [
  'routing_key',
  'arguments',
  'vhost',
  'source',
  'destination',
  'destination_type',
  'properties_key',
];

export interface TopologyDeps {
  readonly broker: Broker;
  /** `vhost` if `user` may see it; the same 404 whether it is missing or hidden. */
  readonly requireVhost: (user: UserRecord, vhost: string) => string;
  /** The queue `user` asks for; 404 if it, or its vhost, is missing or hidden. */
  readonly requireQueue: (user: UserRecord, vhost: string, name: string) => QueueRecord;
}

/** Declare or binding arguments from JSON, as amqplib would encode them; 400 for what cannot be. */
function argumentsTable(body: BodyObject, key = 'arguments'): FieldTable {
  const args = optionalObject(body, key);
  try {
    return jsToFieldTable(args as Record<string, unknown> | undefined);
  } catch (err) {
    throw badRequest(`'${key}': ${(err as Error).message}`);
  }
}

/** A query flag such as `if-unused=true`; 400 for a value that is not true or false. */
function queryFlag(request: ApiRequest, name: string): boolean {
  const value = request.query.get(name);
  if (value === null || value === 'false') return false;
  if (value === 'true') return true;
  throw badRequest(`'${name}' must be true or false`);
}

/** Run a broker operation; its AMQP refusals as ApiErrors. */
async function act<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw fromBrokerError(err);
  }
}

export function topologyRoutes(deps: TopologyDeps): Route[] {
  const { broker } = deps;
  const metadata = (): MetadataMachine => broker.metadataView;
  /** The AMQP session the user's change runs in: its own permissions, in the named vhost. */
  const session = (request: ApiRequest): Session => ({
    user: request.user.name,
    vhost: deps.requireVhost(request.user, request.params[0] as string),
    connectionId: `management:${broker.nodeName}`,
  });
  const requireExchange = (vhost: string, segment: string): string => {
    const name = exchangeFromPath(segment);
    if (metadata().exchange(vhost, name) === undefined) {
      throw notFound(`no exchange '${name}' in vhost '${vhost}'`);
    }
    return name;
  };

  // ------------------------------------------------------------------------------ exchanges

  const putExchange = async (request: ApiRequest): Promise<ApiResponse> => {
    const s = session(request);
    const name = exchangeFromPath(request.params[1] as string);
    const body = objectBody(await request.body());
    onlyFields(body, EXCHANGE_FIELDS, 'an exchange');
    const declare = {
      exchange: name,
      type: requiredString(body, 'type'),
      passive: false,
      durable: optionalBoolean(body, 'durable') ?? true,
      autoDelete: optionalBoolean(body, 'auto_delete') ?? false,
      internal: optionalBoolean(body, 'internal') ?? false,
      arguments: argumentsTable(body),
    };
    const existed = metadata().exchange(s.vhost, name) !== undefined;
    await act(() => broker.declareExchange(s, declare));
    return existed ? NO_CONTENT : CREATED;
  };

  const deleteExchange = async (request: ApiRequest): Promise<ApiResponse> => {
    const s = session(request);
    const name = requireExchange(s.vhost, request.params[1] as string);
    const ifUnused = queryFlag(request, 'if-unused');
    await act(() => broker.deleteExchange(s, name, ifUnused));
    return NO_CONTENT;
  };

  const exchangeBindings =
    (side: 'source' | 'destination') =>
    (request: ApiRequest): ApiResponse => {
      const vhost = deps.requireVhost(request.user, request.params[0] as string);
      const name = requireExchange(vhost, request.params[1] as string);
      const out: Json[] = [];
      if (side === 'source' && name === '') {
        for (const q of sortedQueues(metadata(), vhost)) out.push(defaultBindingJson(q));
      }
      for (const b of metadata().bindings(vhost)) {
        const matches =
          side === 'source' ? b.source === name : b.destinationKind === 'exchange' && b.destination === name;
        if (matches) out.push(bindingJson(b));
      }
      return { status: 200, body: out };
    };

  // ------------------------------------------------------------------------------ queues

  const putQueue = async (request: ApiRequest): Promise<ApiResponse> => {
    const s = session(request);
    const name = request.params[1] as string;
    const body = objectBody(await request.body(), true);
    onlyFields(body, QUEUE_FIELDS, 'a queue');
    // RabbitMQ's 3.x bodies may carry the queue type apart from the arguments.
    const type = body.type === null ? undefined : optionalString(body, 'type');
    let args = argumentsTable(body);
    if (type !== undefined && args.entries.every((e) => e.key !== 'x-queue-type')) {
      args = { entries: [...args.entries, { key: 'x-queue-type', value: { longStr: type } }] };
    }
    const existed = metadata().queue(s.vhost, name) !== undefined;
    await act(() =>
      broker.declareQueue(s, {
        queue: name,
        passive: false,
        durable: optionalBoolean(body, 'durable') ?? true,
        exclusive: false,
        autoDelete: optionalBoolean(body, 'auto_delete') ?? false,
        arguments: args,
      }),
    );
    return existed ? NO_CONTENT : CREATED;
  };

  const deleteQueue = async (request: ApiRequest): Promise<ApiResponse> => {
    const s = session(request);
    const q = deps.requireQueue(request.user, s.vhost, request.params[1] as string);
    const ifEmpty = queryFlag(request, 'if-empty');
    const ifUnused = queryFlag(request, 'if-unused');
    await act(() => broker.deleteQueue(s, q.name, ifUnused, ifEmpty));
    return NO_CONTENT;
  };

  const purgeQueue = async (request: ApiRequest): Promise<ApiResponse> => {
    const s = session(request);
    const q = deps.requireQueue(request.user, s.vhost, request.params[1] as string);
    await act(() => broker.purgeQueue(s, q.name));
    return NO_CONTENT;
  };

  const queueBindings = (request: ApiRequest): ApiResponse => {
    const q = deps.requireQueue(request.user, request.params[0] as string, request.params[1] as string);
    const out: Json[] = [defaultBindingJson(q)];
    for (const b of metadata().bindings(q.vhost)) {
      if (b.destinationKind === 'queue' && b.destination === q.name) out.push(bindingJson(b));
    }
    return { status: 200, body: out };
  };

  // ------------------------------------------------------------------------------ bindings

  /** The bindings from the source to the destination a bindings path names (both must exist). */
  const between = (
    request: ApiRequest,
    kind: DestinationKind,
  ): {
    vhost: string;
    source: string;
    destination: string;
    found: BindingRecord[];
    implicit: QueueRecord | undefined;
  } => {
    const vhost = deps.requireVhost(request.user, request.params[0] as string);
    const source = requireExchange(vhost, request.params[1] as string);
    const destination =
      kind === 'queue'
        ? deps.requireQueue(request.user, vhost, request.params[2] as string).name
        : requireExchange(vhost, request.params[2] as string);
    const found = metadata()
      .bindings(vhost)
      .filter((b) => b.source === source && b.destinationKind === kind && b.destination === destination);
    // The default exchange binds every queue by its name, implicitly.
    const implicit = source === '' && kind === 'queue' ? metadata().queue(vhost, destination) : undefined;
    return { vhost, source, destination, found, implicit };
  };

  const listBetween =
    (kind: DestinationKind) =>
    (request: ApiRequest): ApiResponse => {
      const { found, implicit } = between(request, kind);
      const out: Json[] = implicit === undefined ? [] : [defaultBindingJson(implicit)];
      for (const b of found) out.push(bindingJson(b));
      return { status: 200, body: out };
    };

  const bind =
    (kind: DestinationKind) =>
    async (request: ApiRequest): Promise<ApiResponse> => {
      const { source, destination } = between(request, kind);
      const body = objectBody(await request.body(), true);
      onlyFields(body, BINDING_FIELDS, 'a binding');
      const routingKey = optionalString(body, 'routing_key') ?? '';
      const args = argumentsTable(body);
      await act(() => broker.bind(session(request), kind, destination, source, routingKey, args));
      // As RabbitMQ: the new binding's URL relative to the one posted to (clients such as
      // Terraform's provider take the properties key from it).
      const props = encodeURIComponent(bindingPropertiesKey(routingKey, args));
      return { status: 201, headers: { Location: `${encodeURIComponent(destination)}/${props}` } };
    };

  /** The binding a props segment names among those `between` found; 404 when none. */
  const named = (request: ApiRequest, kind: DestinationKind): BindingRecord | QueueRecord => {
    const { vhost, source, destination, found, implicit } = between(request, kind);
    const props = request.params[3] as string;
    const binding = found.find((b) => bindingPropertiesKey(b.routingKey, b.arguments) === props);
    if (binding !== undefined) return binding;
    if (implicit !== undefined && props === bindingPropertiesKey(implicit.name, { entries: [] }))
      return implicit;
    throw notFound(
      `no binding '${props}' from exchange '${source}' to ${kind} '${destination}' in vhost '${vhost}'`,
    );
  };

  const getBinding =
    (kind: DestinationKind) =>
    (request: ApiRequest): ApiResponse => {
      const found = named(request, kind);
      return { status: 200, body: 'groupId' in found ? defaultBindingJson(found) : bindingJson(found) };
    };

  const unbind =
    (kind: DestinationKind) =>
    async (request: ApiRequest): Promise<ApiResponse> => {
      const found = named(request, kind);
      // The default exchange's implicit bindings are refused by the broker (403), as in RabbitMQ.
      const [source, destination, key, args] =
        'groupId' in found
          ? ['', found.name, found.name, { entries: [] }]
          : [found.source, found.destination, found.routingKey, found.arguments];
      await act(() => broker.unbind(session(request), kind, destination, source, key, args));
      return NO_CONTENT;
    };

  const bindingRoutes = (letter: 'q' | 'e', kind: DestinationKind): Route[] => [
    {
      path: ['bindings', ':vhost', 'e', ':source', letter, ':destination'],
      methods: { GET: listBetween(kind), POST: bind(kind) },
    },
    {
      path: ['bindings', ':vhost', 'e', ':source', letter, ':destination', ':props'],
      methods: { GET: getBinding(kind), DELETE: unbind(kind) },
    },
  ];

  return [
    { path: ['exchanges', ':vhost', ':name'], methods: { PUT: putExchange, DELETE: deleteExchange } },
    {
      path: ['exchanges', ':vhost', ':name', 'bindings', 'source'],
      methods: { GET: exchangeBindings('source') },
    },
    {
      path: ['exchanges', ':vhost', ':name', 'bindings', 'destination'],
      methods: { GET: exchangeBindings('destination') },
    },
    { path: ['queues', ':vhost', ':name'], methods: { PUT: putQueue, DELETE: deleteQueue } },
    { path: ['queues', ':vhost', ':name', 'contents'], methods: { DELETE: purgeQueue } },
    { path: ['queues', ':vhost', ':name', 'bindings'], methods: { GET: queueBindings } },
    ...bindingRoutes('q', 'queue'),
    ...bindingRoutes('e', 'exchange'),
  ];
}

function sortedQueues(metadata: MetadataMachine, vhost: string): QueueRecord[] {
  return metadata.queues(vhost).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
