// What the logged-in user may do, from its tags (RabbitMQ's meanings), so the console shows only
// the buttons that would work. The API enforces every rule again: hiding a button is a courtesy.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

export interface Caps {
  readonly user: string;
  readonly tags: readonly string[];
  /** Users, vhosts, permissions, cluster membership: `administrator`. */
  readonly admin: boolean;
  /** Reads and changes policies: `administrator` or `policymaker`. */
  readonly policies: boolean;
  /** Declares and deletes exchanges, queues and bindings, redrives (the API checks permissions). */
  readonly topology: boolean;
  /** Sees nodes, cluster and checks: `administrator` or `monitoring`. */
  readonly nodes: boolean;
}

export function capsOf(user: string, tags: readonly string[]): Caps {
  const has = (tag: string): boolean => tags.includes(tag);
  const admin = has('administrator');
  return {
    user,
    tags,
    admin,
    policies: admin || has('policymaker'),
    // A monitoring user only watches: RabbitMQ's monitoring tag is for read-only dashboards.
    topology: admin || has('policymaker') || has('management'),
    nodes: admin || has('monitoring'),
  };
}

export const CapsContext = createContext<Caps>(capsOf('', []));

export function useCaps(): Caps {
  return useContext(CapsContext);
}
