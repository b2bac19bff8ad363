/**
 * The shapes every management API endpoint module shares: a request, a response, a handler and a
 * route. Apart from management-api.ts (which re-exports them) so that a module of routes does not
 * import the API that imports it.
 */
import type { UserRecord } from '../metadata/types.ts';
import type { RequestAccess } from './access.ts';
import type { Json } from './views.ts';

export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** One API request, authenticated, its path split and decoded. */
export interface ApiRequest {
  readonly method: string;
  /** The path's parameters in order (decoded: '%2F' is the vhost '/'). */
  readonly params: readonly string[];
  /** The query string's parameters. */
  readonly query: URLSearchParams;
  readonly user: UserRecord;
  /** The JSON body (read on demand: only handlers that take one read it). */
  readonly body: () => Promise<unknown>;
  /** A request header by lower-case name (RabbitMQ's `X-Reason` of a connection close). */
  readonly header?: (name: string) => string | undefined;
}

export interface ApiResponse {
  readonly status: number;
  /** Absent for 201/204. */
  readonly body?: Json;
  /** Extra response headers (a created binding's Location). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A request that passed its route's access rule (access-table.ts), with what the rule allows. */
export interface RoutedRequest extends ApiRequest {
  readonly access: RequestAccess;
}

export type Handler = (request: RoutedRequest) => Promise<ApiResponse> | ApiResponse;

/** An endpoint: its path and a handler per method. */
export interface Route {
  /** Literal segments and ':param' placeholders, after the leading 'api'. */
  readonly path: readonly string[];
  readonly methods: Readonly<Partial<Record<Method, Handler>>>;
}
