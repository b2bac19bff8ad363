/**
 * What a node's redrives use of its broker and cluster (the `RedriveJobsPort`): the metadata
 * replica and group, the browse of a queue's leader, the queue handles that reach leaders anywhere,
 * the router, and the permission regexes (a redrive runs with its user's permissions, checked again
 * for each message, so a permission revoked meanwhile stops what it no longer allows).
 */
import type { BasicProperties } from '@styx/client/wire';
import type { Broker } from '../broker/broker.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { canAccess } from '../metadata/permissions.ts';
import { systemPacerClock } from './rate-pacer.ts';
import type { RedriveJobsPort } from './redrive-jobs.ts';

/** The connection id a redrive's queue operations are made under (it owns no exclusive queue). */
const REDRIVE_CONNECTION = 'redrive';

export function brokerRedrivePort(broker: Broker, cluster: ClusterView): RedriveJobsPort {
  const metadata = broker.metadataView;
  const selfId = cluster.self().id;
  return {
    selfId,
    logger: broker.logger.child({ component: 'redrive' }),
    clock: systemPacerClock,
    record: (id) => metadata.redrive(id),
    records: () => metadata.redriveRecords(),
    propose: (command) => broker.manage(command),
    queue: (vhost, name) => metadata.queue(vhost, name),
    browse: (queue, request) => broker.queueBrowser.browse(queue, request),
    handle: (queue, user) =>
      broker.queueForUse({ user, vhost: queue.vhost, connectionId: REDRIVE_CONNECTION }, queue.name, 'read'),
    route: (vhost, exchange, routingKey, headers) =>
      broker.exchange(vhost, exchange) === undefined
        ? undefined
        : broker.route(vhost, exchange, [routingKey], headers).targets,
    writeRefusal: (user, vhost, exchange) =>
      canAccess(metadata, user, vhost, 'write', exchange)
        ? undefined
        : `access refused: user '${user}' may not write to exchange '${exchange}' in vhost '${vhost}'`,
    ttl: (properties: BasicProperties) => {
      const expiration = properties.expiration;
      if (expiration === undefined || expiration === null || expiration === '') return undefined;
      try {
        return broker.parseExpiration(expiration);
      } catch {
        // Invalid: a publish with it would have been refused, so it cannot be in a queue; none.
        return undefined;
      }
    },
    leadsMetadata: () => cluster.metadataLeader() === selfId,
    nodeGone: (id) => {
      const member = cluster.members().find((m) => m.id === id);
      return member === undefined || !member.online;
    },
  };
}
