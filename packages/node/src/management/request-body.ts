/**
 * Reading and checking JSON request bodies. A body is read only by handlers that take one, is
 * bounded in size, and every wrong shape is a 400 naming the field — never an exception that
 * reaches the server as a 500.
 */
import type { IncomingMessage } from 'node:http';
import { badRequest, payloadTooLarge } from './api-error.ts';

/** Largest request body accepted, bytes. Management bodies are a few hundred bytes; 1 MiB is generous. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Largest definitions file accepted (`POST /api/definitions[/{vhost}]`), bytes. An export takes
 * about 250 bytes per queue with its binding, so 32 MiB holds a topology of 100,000 queues; the
 * parse of one that size takes a few hundred ms of the event loop, once, for an administrator.
 */
export const MAX_DEFINITIONS_BYTES = 32 * 1024 * 1024;

const DEFINITIONS_PATH = /^\/api\/definitions(?:[/?]|$)/;

/** The bound on the body of a request to `url`. */
export function bodyLimitFor(url: string | undefined): number {
  return DEFINITIONS_PATH.test(url ?? '') ? MAX_DEFINITIONS_BYTES : MAX_BODY_BYTES;
}

/** A parsed JSON object body. */
export type BodyObject = Readonly<Record<string, unknown>>;

/**
 * The request's body parsed as JSON; undefined for an empty body. 413 past `bodyLimitFor` its path
 * (the rest is not read), 400 for anything that is not JSON.
 */
export async function readJsonBody(request: IncomingMessage): Promise<unknown> {
  const limit = bodyLimitFor(request.url);
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw payloadTooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw payloadTooLarge(limit);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks, size));
  } catch {
    throw badRequest('the request body is not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`the request body is not valid JSON: ${(err as Error).message}`);
  }
}

/** The body as a JSON object; `{}` for an empty body when `optional`. */
export function objectBody(body: unknown, optional = false): BodyObject {
  if (body === undefined && optional) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('the request body must be a JSON object');
  }
  return body as BodyObject;
}

export function requiredString(body: BodyObject, key: string): string {
  const value = body[key];
  if (typeof value !== 'string') throw badRequest(`'${key}' must be a string`);
  return value;
}

export function optionalString(body: BodyObject, key: string): string | undefined {
  return body[key] === undefined ? undefined : requiredString(body, key);
}

/** 400 naming the first field of `body` not in `known` (a typo must not be silently ignored). */
export function onlyFields(body: BodyObject, known: readonly string[], what: string): void {
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) {
      throw badRequest(`unknown field '${key}' in ${what} (known: ${known.join(', ')})`);
    }
  }
}

/**
 * A boolean field: true or false, or the strings "true" and "false", which RabbitMQ accepts too
 * (rabbitmqadmin sends `"durable": "true"`).
 */
export function optionalBoolean(body: BodyObject, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined) return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (typeof value !== 'boolean') throw badRequest(`'${key}' must be true or false`);
  return value;
}

/** A JSON object field (declare or binding arguments); undefined when absent. */
export function optionalObject(body: BodyObject, key: string): BodyObject | undefined {
  const value = body[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(`'${key}' must be a JSON object`);
  }
  return value as BodyObject;
}
