import type { BasicProperties } from './types.ts';

/**
 * Every member of BasicProperties, in schema order. Code that copies properties lists them from here
 * instead of spreading: a decoded wire message keeps unset fields on its prototype, so it must not be
 * enumerated. The Record type makes the build fail here if the schema gains a property.
 */
const NAMES: Record<keyof BasicProperties, true> = {
  contentType: true,
  contentEncoding: true,
  headers: true,
  deliveryMode: true,
  priority: true,
  correlationId: true,
  replyTo: true,
  expiration: true,
  messageId: true,
  timestamp: true,
  type: true,
  userId: true,
  appId: true,
  clusterId: true,
};

export const BASIC_PROPERTY_NAMES: readonly (keyof BasicProperties)[] = Object.freeze(
  Object.keys(NAMES) as (keyof BasicProperties)[],
);
