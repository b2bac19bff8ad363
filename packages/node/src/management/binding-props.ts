/**
 * A binding's `properties_key`: the last path segment of RabbitMQ's
 * `/api/bindings/{vhost}/e/{source}/{q|e}/{destination}/{props}`, naming one binding between a
 * source and a destination by its routing key and arguments.
 *
 * As in RabbitMQ, the key is the routing key with '%' and '~' escaped ('%25', '%7E'), then, when the
 * binding has arguments, '~' and a hash of them; a binding with an empty key and no arguments is
 * '~'. Clients treat it as opaque (they read it from a listing and send it back URL-encoded), so
 * the hash need not be RabbitMQ's (an MD5 of Erlang's term encoding): here it is the base64url of
 * the first 12 bytes of a SHA-256 of the arguments' canonical form, the one binding identity uses.
 */
import { createHash } from 'node:crypto';
import type { FieldTable } from '@styx/client/wire';
import { canonicalTableKey } from '../metadata/field-values.ts';

const HASH_BYTES = 12;

function escapeKey(routingKey: string): string {
  return routingKey.replaceAll('%', '%25').replaceAll('~', '%7E');
}

/** The properties key of a binding with this routing key and these arguments. */
export function bindingPropertiesKey(routingKey: string, args: FieldTable): string {
  if (args.entries.length === 0) return routingKey === '' ? '~' : escapeKey(routingKey);
  const hash = createHash('sha256')
    .update(canonicalTableKey(args))
    .digest()
    .subarray(0, HASH_BYTES)
    .toString('base64url');
  return `${escapeKey(routingKey)}~${hash}`;
}
