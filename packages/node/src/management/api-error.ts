/**
 * Errors of the management API. Every refusal is an `ApiError`: an HTTP status, a stable `code`
 * sent as the reply's `error` field, and a human `reason` — the `{error, reason}` body RabbitMQ's
 * management API sends.
 */
import { ReplyCode } from '@styx/client/wire';
import { ClusterError } from '../cluster/errors.ts';
import { QueueLinkLostError, QueueLinkRemoteError, QueueLinkTimeoutError } from '../cluster/queue-link.ts';
import { ChannelError, ConnectionError } from '../errors/amqp-error.ts';
import type { MetadataError } from '../metadata/types.ts';

/** The `error` field of an error reply, one per failure mode. */
export type ApiErrorCode =
  | 'bad_request'
  | 'not_authorised'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'misdirected_request'
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

/** 415: a body that is not `application/json` (as RabbitMQ answers). */
export function unsupportedMediaType(reason: string): ApiError {
  return new ApiError(415, 'unsupported_media_type', reason);
}

/** 421: the request's `Host` is not a name of this listener (host-names.ts). */
export function misdirectedRequest(reason: string): ApiError {
  return new ApiError(421, 'misdirected_request', reason);
}

export function serviceUnavailable(reason: string): ApiError {
  return new ApiError(503, 'service_unavailable', reason);
}

/**
 * An AMQP refusal as an HTTP error: 404 stays 404, 403 (reserved names, the default exchange) is
 * 403, and every validation failure (406, 405, 502, 503) is 400 with the refusal's text.
 */
function fromReplyCode(code: number, text: string): ApiError {
  if (code === ReplyCode.NOT_FOUND) return notFound(text);
  if (code === ReplyCode.ACCESS_REFUSED) return forbidden(text);
  return badRequest(text);
}

/** A refused metadata command as an HTTP error (`fromReplyCode`). */
export function fromMetadataError(error: MetadataError): ApiError {
  return fromReplyCode(error.code, error.text);
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
      return serviceUnavailable(error.message);
    default:
      return error;
  }
}

/**
 * A refused broker operation on queue replicas as an HTTP error: a ChannelError by its AMQP code
 * (`fromReplyCode`: an unknown queue or member 404, a refused change 400); a queue link call that
 * failed (the replica asked did not answer in time, its stream broke, or it refused: it no longer
 * leads, or holds no replica) 503, as the same request may succeed once the group has a reachable
 * leader; other cluster refusals as `fromClusterError`. Anything else is returned as it is (a 500
 * when thrown).
 */
export function fromQueueReplicaError(error: unknown): unknown {
  if (error instanceof ChannelError) return fromReplyCode(error.code, error.message);
  if (
    error instanceof QueueLinkLostError ||
    error instanceof QueueLinkTimeoutError ||
    error instanceof QueueLinkRemoteError
  ) {
    return serviceUnavailable(`no replica of the queue answered: ${error.message}`);
  }
  return fromClusterError(error);
}

/**
 * A refused broker operation run for a management request (declare, delete, bind, purge) as an
 * HTTP error: a ChannelError by its AMQP code (`fromReplyCode`), a ConnectionError (503
 * COMMAND_INVALID for an unknown exchange type, 530 NOT_ALLOWED) 400 with its text. Anything else
 * is returned as it is (a 500 when thrown).
 */
export function fromBrokerError(error: unknown): unknown {
  if (error instanceof ChannelError || error instanceof ConnectionError) {
    return fromReplyCode(error.code, error.message);
  }
  return error;
}
