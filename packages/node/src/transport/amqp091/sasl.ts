/**
 * The SASL mechanisms an AMQP 0-9-1 client may log in with (connection.start-ok's mechanism and
 * response), as RabbitMQ offers them by default: PLAIN (RFC 4616: `authzid \0 user \0 password`)
 * and AMQPLAIN (a field table without its length: LOGIN and PASSWORD).
 */
import type { FieldValue } from '@styx/client/wire';
import { Code, ConnectionError } from '../../errors/amqp-error.ts';
import { AmqpReader } from './amqp-reader.ts';
import { AmqpCodecError } from './codec-error.ts';
import { readFieldTable } from './field-table-codec.ts';

/** The mechanisms offered in connection.start, in order of preference. */
export const SASL_MECHANISMS = ['PLAIN', 'AMQPLAIN'] as const;

export interface Credentials {
  readonly user: string;
  readonly password: string;
}

/** The user and password in a start-ok's response; 403 ACCESS_REFUSED for a malformed one. */
export function parseSaslResponse(mechanism: string, response: Buffer): Credentials {
  if (mechanism === 'PLAIN') {
    const parts = response.toString('utf8').split('\0');
    if (parts.length !== 3) {
      throw new ConnectionError(Code.ACCESS_REFUSED, 'PLAIN response is not authzid NUL user NUL password');
    }
    return { user: parts[1] as string, password: parts[2] as string };
  }
  if (mechanism === 'AMQPLAIN') {
    const framed = Buffer.allocUnsafe(4 + response.length);
    framed.writeUInt32BE(response.length, 0);
    response.copy(framed, 4);
    let user: string | undefined;
    let password: string | undefined;
    try {
      const table = readFieldTable(new AmqpReader().reset(framed, 0, framed.length, 10, 11));
      for (const { key, value } of table.entries) {
        if (key === 'LOGIN') user = text(value);
        else if (key === 'PASSWORD') password = text(value);
      }
    } catch (err) {
      if (!(err instanceof AmqpCodecError)) throw err;
      throw new ConnectionError(
        Code.ACCESS_REFUSED,
        `AMQPLAIN response is not a field table: ${err.message}`,
      );
    }
    if (user === undefined || password === undefined) {
      throw new ConnectionError(Code.ACCESS_REFUSED, 'AMQPLAIN response lacks LOGIN or PASSWORD');
    }
    return { user, password };
  }
  // RabbitMQ's answer to a mechanism it does not offer.
  throw new ConnectionError(
    Code.COMMAND_INVALID,
    `unknown authentication mechanism '${mechanism}' (offered: ${SASL_MECHANISMS.join(' ')})`,
  );
}

function text(value: FieldValue): string | undefined {
  if ('longStr' in value && typeof value.longStr === 'string') return value.longStr;
  if ('shortStr' in value && typeof value.shortStr === 'string') return value.shortStr;
  if ('byteArray' in value && value.byteArray instanceof Uint8Array)
    return Buffer.from(value.byteArray).toString('utf8');
  return undefined;
}
