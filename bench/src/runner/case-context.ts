/**
 * The CaseContext a case runs with: it keeps track of the connections, queues and exchanges the case
 * makes, and removes them all afterwards so the next case starts from an empty broker.
 */
import type { BrokerAdapter, QueueSpec } from '../adapters/adapter.ts';
import type { BenchChannel, BenchConnection } from '../adapters/client-api.ts';
import type { BrokerUnderTest } from '../brokers/broker.ts';
import { processTreeCpuMs } from '../brokers/process-stats.ts';
import type { CaseContext } from '../scenarios/scenario.ts';

/** How long one cleanup step (a close, a delete) may take before it is abandoned, ms. */
const CLEANUP_STEP_MS = 10_000;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<undefined>((done) => {
      timer = setTimeout(() => done(undefined), ms);
    }),
  ]);
}

let runCounter = 0;

export class TrackedCaseContext implements CaseContext {
  readonly target: BrokerUnderTest['target'];
  readonly adapter: BrokerAdapter;
  readonly stallTimeoutMs: number;
  /** Read live: a restart (scenario l) gives the broker a new process and, for Styx, a new port. */
  readonly #broker: BrokerUnderTest;
  readonly #prefix: string;
  readonly #onStatus: (text: string) => void;
  readonly #connections: BenchConnection[] = [];
  readonly #queues: string[] = [];
  readonly #exchanges: string[] = [];
  #admin: Promise<BenchChannel> | undefined;

  constructor(
    broker: BrokerUnderTest,
    adapter: BrokerAdapter,
    caseId: string,
    stallTimeoutMs: number,
    onStatus: (text: string) => void,
  ) {
    this.target = broker.target;
    this.adapter = adapter;
    this.#broker = broker;
    this.stallTimeoutMs = stallTimeoutMs;
    this.#onStatus = onStatus;
    // Unique per run and per case, so a leftover from an interrupted case never collides.
    this.#prefix = `bench.${caseId}.${process.pid}-${++runCounter}`;
  }

  get brokerPid(): number {
    return this.#broker.pid;
  }

  get broker(): BrokerUnderTest {
    return this.#broker;
  }

  brokerCpuMs(): number | undefined {
    return processTreeCpuMs(this.#broker.pids);
  }

  async connect(url: string = this.#broker.url): Promise<BenchConnection> {
    const conn = await this.adapter.connect(url);
    // A connection error also fails whatever the case awaits; this only keeps it from crashing the bench.
    conn.on('error', () => undefined);
    this.#connections.push(conn);
    return conn;
  }

  #adminChannel(): Promise<BenchChannel> {
    this.#admin ??= (async () => {
      const ch = await (await this.connect()).createChannel();
      ch.on('error', () => {
        this.#admin = undefined; // a refused declare closes the channel; the next call opens another
      });
      return ch;
    })();
    return this.#admin;
  }

  async declareQueue(role: string, spec: QueueSpec = {}): Promise<string> {
    const name = `${this.#prefix}.${role}`;
    this.#queues.push(name);
    await (await this.#adminChannel()).assertQueue(name, this.adapter.queueOptions(spec));
    return name;
  }

  async declareExchange(role: string): Promise<string> {
    const name = `${this.#prefix}.${role}`;
    this.#exchanges.push(name);
    await (await this.#adminChannel()).assertExchange(name, 'fanout', { durable: true });
    return name;
  }

  async bind(queue: string, exchange: string): Promise<void> {
    await (await this.#adminChannel()).bindQueue(queue, exchange, '');
  }

  status(text: string): void {
    this.#onStatus(text);
  }

  /** Closes every connection of the case, then deletes its queues and exchanges. Never throws. */
  async dispose(): Promise<void> {
    await Promise.all(
      this.#connections.map((c) =>
        withTimeout(
          c.close().catch(() => undefined),
          CLEANUP_STEP_MS,
        ),
      ),
    );
    if (this.#queues.length === 0 && this.#exchanges.length === 0) return;
    let conn: BenchConnection | undefined;
    try {
      conn = await this.adapter.connect(this.#broker.url);
      conn.on('error', () => undefined);
      for (const q of this.#queues) await this.#deleteWith(conn, (ch) => ch.deleteQueue(q));
      for (const x of this.#exchanges) await this.#deleteWith(conn, (ch) => ch.deleteExchange(x));
    } catch {
      // The broker is gone or refuses: the runner notices a dead broker on its own.
    } finally {
      if (conn !== undefined)
        await withTimeout(
          conn.close().catch(() => undefined),
          CLEANUP_STEP_MS,
        );
    }
  }

  /** One delete on its own channel: a refused delete closes only that channel. */
  async #deleteWith(conn: BenchConnection, op: (ch: BenchChannel) => Promise<unknown>): Promise<void> {
    try {
      const ch = await conn.createChannel();
      ch.on('error', () => undefined);
      await withTimeout(op(ch), CLEANUP_STEP_MS);
      await withTimeout(
        ch.close().catch(() => undefined),
        CLEANUP_STEP_MS,
      );
    } catch {
      // nothing to delete, or the channel was closed by the refusal
    }
  }
}
