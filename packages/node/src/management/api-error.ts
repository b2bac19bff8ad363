/**
 * Errors of the management API. Every refusal is an `ApiError`: an HTTP status, a stable `code`
 * sent as the reply's `error` field, and a human `reason` — the `{error, reason}` body RabbitMQ's
 * management API sends.
 */
import { ReplyCode } from '@styx/client/wire';
import { ClusterError } from '../cluster/errors.ts';
import type { MetadataError } from '../metadata/types.ts';

/** The `error` field of an error reply, one per failure mode. */
export type ApiErrorCode =
  | 'bad_request'
  | 'not_authorised'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'internal_error'
  | 'service_unavailable';

export class ApiError extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  /** Extra response headers (WWW-Authenticate on 401, Allow on 405). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    code: ApiErrorCode,
    reason: string,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(reason);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** The realm browsers show when they ask for credentials. */
const REALM = 'Basic realm="Styx Management"';

export function badRequest(reason: string): ApiError {
  return new ApiError(400, 'bad_request', reason);
}

/** 401: no credentials, or wrong ones. */
export function notAuthorised(reason: string): ApiError {
  return new ApiError(401, 'not_authorised', reason, { 'WWW-Authenticate': REALM });
}

/**
 * 403: authenticated, but the user's tags do not allow the operation. RabbitMQ answers these with
 * 401; Styx uses 403 so a client does not retry the same credentials as if they were wrong.
 */
export function forbidden(reason: string): ApiError {
  return new ApiError(403, 'forbidden', reason);
}

export function notFound(reason: string): ApiError {
  return new ApiError(404, 'not_found', reason);
}

export function methodNotAllowed(method: string, allowed: readonly string[]): ApiError {
  return new ApiError(405, 'method_not_allowed', `method ${method} is not allowed here`, {
    Allow: allowed.join(', '),
  });
}

export function payloadTooLarge(limitBytes: number): ApiError {
  return new ApiError(413, 'payload_too_large', `request body is larger than ${limitBytes} bytes`);
}

/**
 * A refused metadata command as an HTTP error: 404 stays 404, 403 (reserved names, the default
 * exchange) is 403, and every validation failure (406, 405, 502, 503) is 400 with the machine's text.
 */
export function fromMetadataError(error: MetadataError): ApiError {
  if (error.code === ReplyCode.NOT_FOUND) return notFound(error.text);
  if (error.code === ReplyCode.ACCESS_REFUSED) return forbidden(error.text);
  return badRequest(error.text);
}

/**
 * A ClusterView refusal as an HTTP error (see cluster-view.ts): an unknown node is 404, a refused
 * change or a node without clustering 400, no reachable metadata leader 503. Anything else is
 * returned as it is (a 500 when thrown).
 */
export function fromClusterError(error: unknown): unknown {
  if (!(error instanceof ClusterError)) return error;
  switch (error.code) {
    case 'CLUSTER_NODE_NOT_FOUND':
      return notFound(error.message);
    case 'CLUSTERING_DISABLED':
    case 'CLUSTER_CHANGE_REFUSED':
      return badRequest(error.message);
    case 'CLUSTER_UNAVAILABLE':
      return new ApiError(503, 'service_unavailable', error.message);
    default:
      return error;
  }
}
