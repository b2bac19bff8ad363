/**
 * The largest message body a client may publish (`max_message_size`), as RabbitMQ 4 bounds it: a
 * publish over it is refused by the channel core with 406 PRECONDITION_FAILED, closing only its
 * channel, whatever the protocol it came in. Transports that reassemble a body from several frames
 * also ask `checkMessageSize` with the size the header declares, so a body over the limit is never
 * buffered.
 */
import { type ChannelError, preconditionFailed } from '../errors/amqp-error.ts';

/** RabbitMQ 4's default `max_message_size`: 16 MiB. */
export const DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024;

/** The highest `max_message_size` an operator may set: 512 MiB, RabbitMQ's own ceiling. */
export const MAX_MESSAGE_SIZE_LIMIT = 512 * 1024 * 1024;

/**
 * The error for a body of `size` bytes over `max`, or undefined when it fits. The text is
 * RabbitMQ's (rabbit_channel's check_msg_size), which says "configured" unless the limit is the
 * ceiling itself.
 */
export function messageSizeError(size: number, max: number): ChannelError | undefined {
  if (size <= max) return undefined;
  const which = max === MAX_MESSAGE_SIZE_LIMIT ? 'max size' : 'configured max size';
  return preconditionFailed(`message size ${size} is larger than ${which} ${max}`);
}

/** Throws the 406 of `messageSizeError` when a body of `size` bytes is over `max`. */
export function checkMessageSize(size: number, max: number): void {
  const error = messageSizeError(size, max);
  if (error !== undefined) throw error;
}
