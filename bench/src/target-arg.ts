// `--target` of the bench and of connection-storm.ts: which brokers run, in the order they take turns.
import type { Target } from './brokers/broker.ts';
import { TARGETS } from './brokers/broker.ts';

/** The names `--target` takes besides the targets themselves. */
const GROUPS: Readonly<Record<string, readonly Target[]>> = {
  // What `both` meant before the AMQP column existed: the SDK column beside RabbitMQ.
  both: ['styx', 'rabbitmq'],
  all: TARGETS,
};

/** What `--target` accepts, for usage texts. */
export const TARGET_SYNOPSIS = `${[...TARGETS, ...Object.keys(GROUPS)].join(' | ')} | a comma list (styx,styx-amqp)`;

/** The run's targets when `--target` is absent: every column that can run here. */
export function defaultTargets(rabbitMqInstalled: boolean): Target[] {
  return TARGETS.filter((t) => rabbitMqInstalled || t !== 'rabbitmq');
}

/**
 * `--target`'s value as targets, in the order given (a group expands in place), each once. Throws a
 * RangeError naming the bad part for an unknown name or an empty item.
 */
export function parseTargets(value: string): Target[] {
  const targets: Target[] = [];
  for (const raw of value.split(',')) {
    const name = raw.trim();
    const expanded = GROUPS[name] ?? (TARGETS.includes(name as Target) ? [name as Target] : undefined);
    if (expanded === undefined)
      throw new RangeError(
        name === ''
          ? `--target has an empty item in '${value}'`
          : `--target: unknown target '${name}' (${TARGET_SYNOPSIS})`,
      );
    for (const t of expanded) if (!targets.includes(t)) targets.push(t);
  }
  return targets;
}
