/**
 * A node alone (in memory) with its management server on 127.0.0.1, and a client that calls the
 * API as a user: for the tests of the management API's endpoints.
 */
import type { BrokerOptions } from '../../broker/broker.ts';
import { Broker } from '../../broker/broker.ts';
import { silentLogger } from '../../logging/logger.ts';
import { ManagementServer } from '../management-server.ts';

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

export const GUEST: Credentials = { user: 'guest', password: 'guest' };

export interface Reply {
  readonly status: number;
  readonly body: unknown;
}

export class ManagementHarness {
  readonly broker: Broker;
  readonly server: ManagementServer;

  private constructor(broker: Broker, server: ManagementServer) {
    this.broker = broker;
    this.server = server;
  }

  /** `options`: the broker's, over the defaults (no memory budget). */
  static async start(
    nodeName = 'mgmt-test',
    options: Partial<Omit<BrokerOptions, 'nodeName' | 'logger'>> = {},
  ): Promise<ManagementHarness> {
    const broker = await Broker.start({ nodeName, logger: silentLogger(), memoryBudgetBytes: 0, ...options });
    const server = new ManagementServer({ broker, logger: silentLogger() });
    await server.start('127.0.0.1', 0);
    return new ManagementHarness(broker, server);
  }

  async stop(): Promise<void> {
    await this.server.close();
    await this.broker.shutdown();
  }

  /** Call the API; a string body is sent as it is (for malformed JSON), anything else as JSON. */
  async api(method: string, path: string, body?: unknown, as: Credentials = GUEST): Promise<Reply> {
    const headers: Record<string, string> = {
      Authorization: `Basic ${Buffer.from(`${as.user}:${as.password}`).toString('base64')}`,
    };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
    const response = await fetch(`${this.server.url as string}${path}`, { method, headers, body: payload });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }

  /** A user with `tags` and, per vhost given, the permission regexes given (as guest). */
  async makeUser(
    name: string,
    tags: readonly string[],
    permissions: Readonly<Record<string, { configure: string; write: string; read: string }>> = {},
  ): Promise<Credentials> {
    const password = `${name}-pw`;
    const created = await this.api('PUT', `/api/users/${name}`, { password, tags });
    if (created.status !== 201) throw new Error(`user ${name}: ${created.status}`);
    for (const [vhost, p] of Object.entries(permissions)) {
      const set = await this.api('PUT', `/api/permissions/${encodeURIComponent(vhost)}/${name}`, p);
      if (set.status !== 201) throw new Error(`permissions of ${name} in ${vhost}: ${set.status}`);
    }
    return { user: name, password };
  }
}

/** Permission regexes allowing everything. */
export const ALL = { configure: '.*', write: '.*', read: '.*' } as const;
