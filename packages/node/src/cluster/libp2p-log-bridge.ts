import type { ComponentLogger, Logger as Libp2pLogger } from '@libp2p/interface';
import type { Logger } from '../logging/logger.ts';

const noop = (): void => {};

/**
 * Routes libp2p's own error logs into the node's pino logger (libp2p otherwise writes through the
 * `debug` module, silent unless `DEBUG` is set). One of them matters to operators: an inbound
 * connection that fails its upgrade. That is a peer without the cluster secret (its noise
 * handshake fails authentication, see `secretBoundNoise`, before any stream exists), a node of a
 * build that still ran the private network (pnet), or anything else that is not a cluster node,
 * and it is logged at warn. Refusals by the membership gater fail the upgrade too, but the gater
 * logged them already with the peer id, so they are skipped here. Every other libp2p error goes to
 * debug; libp2p's trace and info lines are dropped.
 */
export function libp2pLogBridge(logger: Logger): ComponentLogger {
  const log = logger.child({ component: 'libp2p' });
  const forComponent = (name: string): Libp2pLogger =>
    Object.assign((_formatter: unknown, ..._args: unknown[]) => {}, {
      enabled: false,
      trace: noop,
      newScope: (scope: string) => forComponent(`${name}:${scope}`),
      error: (formatter: unknown, ...args: unknown[]) => {
        const text = String(formatter);
        const error = args.at(-1);
        if (text.startsWith('failed to upgrade') && args[0] === 'inbound') {
          if (error instanceof Error && error.name === 'ConnectionInterceptedError') return;
          log.warn(
            { remoteAddr: String(args[2]), err: error },
            'inbound connection refused: handshake failed (wrong cluster secret, a node of a build with the private network, or not a cluster node)',
          );
          return;
        }
        log.debug({ libp2p: name, err: error instanceof Error ? error : undefined }, text);
      },
    });
  return { forComponent };
}
