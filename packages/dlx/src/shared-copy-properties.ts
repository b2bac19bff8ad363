/**
 * Dead-lettered copies that share one properties object when theirs would be equal.
 *
 * A burst of expiries (or rejections) from one queue makes copies whose properties differ only by
 * what the message itself carried: same queue, reason, second, exchange and routing key give the
 * same `x-death` and `x-first-death-*` headers. When the messages carried no headers of their own
 * and the same other properties (a publisher that sets none, or only `persistent`), every such copy
 * gets equal properties; sharing the object lets the wire layer encode it once
 * (`encodePropertiesOnce` remembers the bytes per object) instead of once per copy, which cost a
 * dead-lettering leader more than building the copy itself.
 *
 * Safe because properties objects are never modified once built (see the client's
 * properties-encoding.ts), and exact: the key holds every input the copy's properties depend on
 * for a message without headers (queue, reason, time, exchange, routing key, every basic
 * property), so a shared object is equal to the one `deadLetterCopy` just built. A message with
 * headers (CC, an earlier x-death, anything) or a property that is not a string or a number is
 * never shared. Only the last key is kept: a burst shares, anything else costs one comparison.
 */
import type { BasicProperties } from '@styx/client/wire';
import { BASIC_PROPERTY_NAMES } from '@styx/client/wire';
import type { DeadLetteredCopy, DeadLetterInput } from './dead-letter-copy.ts';
import { addressedCopy, deadLetterCopy } from './dead-letter-copy.ts';

export class SharedCopyProperties {
  private key: string | undefined = undefined;
  private properties: BasicProperties | undefined = undefined;

  /**
   * `deadLetterCopy(input)`, with the properties object built for an earlier copy when they would be
   * equal: then only the copy's addressing is made (its message has no headers, so no CC: it was
   * published on its routing key alone), and the input is as valid as that earlier one's.
   */
  copy(input: DeadLetterInput): DeadLetteredCopy {
    const key = sharingKey(input);
    if (key !== undefined && key === this.key && this.properties !== undefined) {
      const { message } = input;
      return addressedCopy(message, input.dlx, input.dlk, [message.routingKey], this.properties);
    }
    const copy = deadLetterCopy(input);
    if (key === undefined) return copy;
    this.key = key;
    this.properties = copy.properties;
    return copy;
  }
}

/** Every input of the copy's properties, length-prefixed; undefined when they must not be shared. */
function sharingKey(input: DeadLetterInput): string | undefined {
  const { message } = input;
  const props = message.properties;
  if ((props.headers?.entries.length ?? 0) > 0) return undefined;
  let key = `${field(input.queue)}${field(input.reason)}${input.timeSeconds}|${field(message.exchange)}${field(message.routingKey)}`;
  for (const name of BASIC_PROPERTY_NAMES) {
    if (name === 'headers') continue;
    const value = props[name];
    if (value == null) key += '-';
    else if (typeof value === 'string') key += `s${field(value)}`;
    else if (typeof value === 'number') key += `n${value}|`;
    else return undefined;
  }
  return key;
}

/** A string as its length and itself: no content can be mistaken for a boundary. */
function field(s: string): string {
  return `${s.length}:${s}`;
}
