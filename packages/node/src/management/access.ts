/** Who may call an endpoint: checked on the user's tags before any lookup, so a 403 reveals nothing. */
import type { UserRecord } from '../metadata/types.ts';
import { forbidden } from './api-error.ts';

export const ADMINISTRATOR = 'administrator';
/** Reads the whole node's state and health (RabbitMQ's `monitoring` tag). */
export const MONITORING = 'monitoring';
/** May also read and change policies in its vhosts. */
export const POLICYMAKER = 'policymaker';
/** May use the management API in the vhosts it has permissions in. */
export const MANAGEMENT = 'management';
/** The tags that let a user use the management API at all. */
export const MANAGEMENT_TAGS: readonly string[] = [ADMINISTRATOR, MONITORING, POLICYMAKER, MANAGEMENT];

/** 403 unless `user` has one of `tags` ("Not administrator or monitoring user", as RabbitMQ words it). */
export function requireTag(user: UserRecord, tags: readonly string[]): void {
  if (!tags.some((tag) => user.tags.includes(tag))) {
    throw forbidden(`Not ${tags.join(' or ')} user`);
  }
}
