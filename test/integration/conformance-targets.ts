// Where the dead-letter conformance tests run: a client driver (client-drivers.ts) against a broker.
// The suite's variants are
//   1. @styx/client over WebSocket, one node;
//   2. amqplib over the AMQP 0-9-1 listener, one node;
//   3. amqplib over AMQP against n3 of a three-node cluster, where no queue the test declares is led
//      by n3: each queue is first declared by the same client (same user) on n2, whose declare
//      creates it and leads it (Styx places a new queue's leader on the declaring node, RabbitMQ's
//      client-local locator), then by the test's own declare on n3, which finds it and answers
//      declare-ok as for any existing queue. The variant checks on n3's management API that the
//      queue is known there and led by n2 before the test goes on, so every publish, get, consume,
//      ack, reject and x-death read of the test crosses from n3 to the queue's leader. (A non-durable
//      queue has no leader: it lives on the node that created it, its one member, n2.)
// and, only when STYX_DLX_CONFORMANCE_RABBITMQ="amqp://127.0.0.1:PORT,http://127.0.0.1:MGMT_PORT"
// is set, amqplib against that RabbitMQ: the check that the test bodies are RabbitMQ-true. The
// suite never starts RabbitMQ; the tests it fails where Styx deliberately differs say so. The Java
// scenarios use the guide's fixed, durable queue names: give each run a fresh vhost '/'.
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BrokerProcess, StartOptions } from '../support/broker-process.ts';
import { freePort, startBroker } from '../support/broker-process.ts';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { ClientChannel, ClientConnection, ClientDriver, Credentials } from './client-drivers.ts';
import { amqplibClient, styxClient } from './client-drivers.ts';
import { guestApi, WAIT_MS, withTimeout } from './messaging-helpers.ts';

/** What a test sees of the broker it runs against. */
export interface Target {
  /** Connect the variant's client (as guest, or `credentials`); closed after the test. */
  connect(credentials?: Credentials): Promise<ClientConnection>;
  /** The management API's base URL, of the node the client talks to. */
  managementUrl(): string;
  /** Every log line of every Styx node; undefined when the broker is not Styx (RabbitMQ). */
  logs(): string[] | undefined;
}

/** A broker started for one variant. */
interface Running {
  readonly url: string;
  readonly managementUrl: string;
  logs(): string[] | undefined;
  /** The connection the test gets, given the raw one (the cluster variant routes declares). */
  adapt?(conn: ClientConnection, credentials: Credentials | undefined): ClientConnection;
  stop(): Promise<void>;
}

export interface Variant {
  readonly name: string;
  readonly client: ClientDriver;
  /** Whether the broker is a Styx cluster (tests that stop or restart a node run on one node only). */
  readonly cluster: boolean;
  start(): Promise<Running>;
}

/**
 * `styx server` flags for an AMQP listener on a chosen free loopback port (kept across a restart,
 * like the node's other ports), and that port's URL. They come after startBroker's own
 * `--amqp-port 0`, and the last one counts.
 */
async function amqpListener(): Promise<{ args: string[]; url: string }> {
  const port = await freePort();
  return { args: ['--amqp-port', String(port)], url: `amqp://127.0.0.1:${port}` };
}

/** A `styx server` node with the listener `client` speaks to, and that listener's URL. */
export async function startNodeFor(
  client: ClientDriver,
  options: StartOptions = {},
): Promise<{ broker: BrokerProcess; url: string }> {
  const broker = await startBroker({ ...options, amqp: client.protocol === 'amqp' });
  const url = client.protocol === 'amqp' ? broker.amqpUrl : broker.url;
  if (url === undefined) throw new Error('the node did not log its AMQP URL');
  return { broker, url };
}

/** One node; the client talks to the listener of its protocol. */
function singleNode(client: ClientDriver): Variant {
  return {
    name: `${client.name}, single node`,
    client,
    cluster: false,
    async start() {
      const { broker, url } = await startNodeFor(client, { management: true });
      return {
        url,
        managementUrl: broker.managementUrl as string,
        logs: () => broker.logs,
        async stop() {
          await broker.stop();
          await broker.cleanup();
        },
      };
    },
  };
}

/** The node the client talks to, and the node that creates (and leads) every queue. */
const CLIENT_NODE = 'n3';
const HOME_NODE = 'n2';

function clusterNonLeader(client: ClientDriver): Variant {
  return {
    name: `${client.name}, non-leader node of 3`,
    client,
    cluster: true,
    async start() {
      const listeners = { n1: await amqpListener(), n2: await amqpListener(), n3: await amqpListener() };
      const cluster = await TestCluster.start(3, {
        nodeArgs:
          client.protocol === 'amqp'
            ? Object.fromEntries(Object.entries(listeners).map(([n, l]) => [n, l.args]))
            : {},
      });
      const urlOf = (node: keyof typeof listeners): string =>
        client.protocol === 'ws' ? cluster.url(node) : listeners[node].url;
      const homeDeclare = async (
        credentials: Credentials | undefined,
        queue: string,
        options: Parameters<ClientChannel['assertQueue']>[1],
      ): Promise<void> => {
        const home = await client.connect(urlOf(HOME_NODE), credentials);
        try {
          await (await home.createChannel()).assertQueue(queue, options);
        } catch {
          // Refused on n2 (a permission test): the test's own declare on n3 gets the refusal.
          return;
        } finally {
          await withTimeout(home.close(), WAIT_MS, 'close').catch(() => undefined);
        }
        await eventually(
          `${CLIENT_NODE} to know queue '${queue}' led by ${HOME_NODE}`,
          async () => {
            const json = await cluster.queue(CLIENT_NODE, queue);
            // A non-durable queue has no leader: its one member is the node it lives on.
            const home = json.leader ?? (json.members?.length === 1 ? json.members[0] : undefined);
            return home === HOME_NODE;
          },
          10_000,
          20,
        );
      };
      const routeDeclares = <C extends ClientChannel>(ch: C, credentials: Credentials | undefined): C => {
        const declare = ch.assertQueue.bind(ch);
        ch.assertQueue = async (queue, options) => {
          await homeDeclare(credentials, queue, options);
          return declare(queue, options);
        };
        return ch;
      };
      return {
        url: urlOf(CLIENT_NODE),
        managementUrl: cluster.node(CLIENT_NODE).broker.managementUrl as string,
        logs: () => cluster.nodes.flatMap((n) => cluster.logsOf(n.name)),
        adapt: (conn, credentials) => ({
          createChannel: async () => routeDeclares(await conn.createChannel(), credentials),
          createConfirmChannel: async () => routeDeclares(await conn.createConfirmChannel(), credentials),
          close: () => conn.close(),
        }),
        stop: () => cluster.stop(),
      };
    },
  };
}

/** RabbitMQ reached with amqplib, for validating the test bodies; never part of the suite. */
function rabbitmq(urls: string): Variant {
  const [url, management] = urls.split(',');
  if (url === undefined || management === undefined)
    throw new Error('STYX_DLX_CONFORMANCE_RABBITMQ: expected "amqp://host:port,http://host:mgmt-port"');
  return {
    name: 'amqplib over AMQP 0-9-1, RabbitMQ (validation run)',
    client: amqplibClient,
    cluster: false,
    start: async () => ({ url, managementUrl: management, logs: () => undefined, stop: async () => {} }),
  };
}

/** The variants the suite runs (and RabbitMQ when asked for). */
export const VARIANTS: readonly Variant[] = [
  singleNode(styxClient),
  singleNode(amqplibClient),
  clusterNonLeader(amqplibClient),
  ...(process.env.STYX_DLX_CONFORMANCE_RABBITMQ === undefined
    ? []
    : [rabbitmq(process.env.STYX_DLX_CONFORMANCE_RABBITMQ)]),
];

/** The client-only variants on one node, for tests that start and restart their own node. */
export const SINGLE_NODE_CLIENTS: readonly ClientDriver[] = [styxClient, amqplibClient];

/**
 * Start `variant`'s broker for the enclosing describe block, and close every connection a test
 * opened after it. Call at the top of the describe block.
 */
export function useVariant(variant: Variant): Target {
  let running: Running | undefined;
  const open: ClientConnection[] = [];
  beforeAll(async () => {
    running = await variant.start();
  }, 120_000);
  afterEach(async () => {
    const conns = open.splice(0);
    await Promise.all(conns.map((c) => withTimeout(c.close(), WAIT_MS, 'connection close').catch(() => {})));
  });
  afterAll(async () => {
    await running?.stop();
  }, 60_000);
  const current = (): Running => {
    if (running === undefined) throw new Error(`${variant.name}: broker not started`);
    return running;
  };
  return {
    async connect(credentials) {
      const r = current();
      const raw = await variant.client.connect(r.url, credentials);
      open.push(raw);
      return r.adapt?.(raw, credentials) ?? raw;
    },
    managementUrl: () => current().managementUrl,
    logs: () => current().logs(),
  };
}

/** A management API call as guest on the target (the status is the caller's to check). */
export function targetApi(
  target: Target,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  return guestApi(target.managementUrl(), method, path, body);
}
