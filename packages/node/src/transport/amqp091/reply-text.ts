// The reply-text of channel.close and connection.close as RabbitMQ writes it: the reply code's name
// from the spec, " - ", then what went wrong ("NOT_FOUND - no queue 'orders' in vhost '/'"). Clients
// show it as is (the Java client's ShutdownSignalException, pika's ChannelClosedByBroker), and
// applications and log searches written against RabbitMQ look for those names.
import { AMQP_CONSTANTS } from './spec.gen.ts';

/**
 * Reply codes by number → their spec names. The spec's other constants are frame types (1-8), the
 * frame-end octet (206, inside the range of codes) and the minimum frame size (4096).
 */
const REPLY_NAMES = new Map<number, string>(
  Object.entries(AMQP_CONSTANTS)
    .filter(([name, value]) => value >= 200 && value < 600 && name !== 'FRAME_END')
    .map(([name, value]) => [value, name]),
);

/** `text` led by the name of `code` (unless it already is, or the code has no name in the spec). */
export function replyText(code: number, text: string): string {
  const name = REPLY_NAMES.get(code);
  if (name === undefined || text === name || text.startsWith(`${name} - `)) return text;
  return text === '' ? name : `${name} - ${text}`;
}
