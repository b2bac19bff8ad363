/**
 * Test support for the queue machine (used by the *.test.ts files beside it): a harness that
 * stamps entries like a log would (index 1, 2, …; a ts the test moves) and checks after every
 * apply that the incremental counts equal a full recount.
 */

import type { HandOffId } from '@styx/dlx';
import type { EntryMeta } from '@styx/raft';
import type { QueueMachineOptions } from './queue-machine.ts';
import { QueueMachine } from './queue-machine.ts';
import type {
  OwnerId,
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  QueueEffect,
  RemovalReason,
  StoredMessage,
} from './types.ts';
import { DEFAULT_QUEUE_CONFIG } from './types.ts';

/** An arbitrary start time, ms since the epoch. */
export const T0 = 1_700_000_000_000;

export type DeliverEffect = Extract<QueueEffect, { type: 'deliver' }>;

/** A message whose body has `size` bytes. */
export function storedMessage(size = 10, routingKey = 'rk'): StoredMessage {
  return { exchange: 'ex', routingKey, properties: {}, body: new Uint8Array(size), bcc: undefined };
}

export function queueConfig(overrides: Partial<QueueConfig> = {}): QueueConfig {
  return { ...DEFAULT_QUEUE_CONFIG, ...overrides };
}

/**
 * The harness's default: dead-letters at-most-once to 'dlx', so every removal shows as a
 * `deadLetter` effect of its reason. Tests of the no-DLX and at-least-once paths override it.
 */
export const HARNESS_CONFIG: QueueConfig = queueConfig({ deadLetterExchange: 'dlx' });

export interface ConsumeOptions {
  readonly prefetch?: number;
  readonly noAck?: boolean;
  readonly exclusive?: boolean;
}

export class MachineHarness {
  readonly machine: QueueMachine;
  index = 0;
  ts: number;

  constructor(config: Partial<QueueConfig> = {}, startTs = T0, options: QueueMachineOptions = {}) {
    this.machine = new QueueMachine({ ...HARNESS_CONFIG, ...config }, options);
    this.ts = startTs;
  }

  /** Move time forward by `ms` (the next entry's ts). */
  advance(ms: number): void {
    this.ts += ms;
  }

  /** The meta of the next entry. */
  nextMeta(): EntryMeta {
    return { index: this.index + 1, term: 1, ts: this.ts };
  }

  apply(command: QueueCommand): QueueApplyResult {
    const result = this.machine.apply(command, this.nextMeta());
    this.index++;
    const counted = this.machine.recount();
    const kept = this.machine.counts();
    if (JSON.stringify(counted) !== JSON.stringify(kept)) {
      throw new Error(`counts ${JSON.stringify(kept)} differ from recount ${JSON.stringify(counted)}`);
    }
    return result;
  }

  /** Enqueue a message of `size` bytes; its id is the returned result's index (`this.index`). */
  enqueue(size = 10, ttl?: number, handOff?: HandOffId): QueueApplyResult {
    return this.apply({ type: 'enqueue', size, ttl, message: storedMessage(size), handOff });
  }

  /** Enqueue `count` messages and return their ids. */
  enqueueMany(count: number, size = 10, ttl?: number): number[] {
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      this.enqueue(size, ttl);
      ids.push(this.index);
    }
    return ids;
  }

  consume(owner: OwnerId, tag: string, options: ConsumeOptions = {}): QueueApplyResult {
    return this.apply({
      type: 'consume',
      owner,
      tag,
      prefetch: options.prefetch ?? 0,
      noAck: options.noAck ?? false,
      exclusive: options.exclusive ?? false,
    });
  }
}

export function deliveries(result: QueueApplyResult): DeliverEffect[] {
  return result.effects.filter((e): e is DeliverEffect => e.type === 'deliver');
}

export function deliveredIds(result: QueueApplyResult): number[] {
  return deliveries(result).map((d) => d.id);
}

/** Ids dead-lettered by this apply, for one reason or all. */
export function deadLettered(result: QueueApplyResult, reason?: RemovalReason): number[] {
  const ids: number[] = [];
  for (const effect of result.effects) {
    if (effect.type === 'deadLetter' && (reason === undefined || effect.reason === reason))
      ids.push(...effect.ids);
  }
  return ids;
}

/** Ids that became pending (at-least-once) in this apply. */
export function handedOff(result: QueueApplyResult): number[] {
  const ids: number[] = [];
  for (const effect of result.effects) if (effect.type === 'deadLetterHandOff') ids.push(...effect.ids);
  return ids;
}

/** The timer effect of an apply: its deadline, 'cancel', or undefined when there is none. */
export function timerOf(result: QueueApplyResult): number | 'cancel' | undefined {
  let timer: number | 'cancel' | undefined;
  let seen = 0;
  for (const effect of result.effects) {
    if (effect.type === 'timer') timer = effect.at;
    else if (effect.type === 'cancelTimer') timer = 'cancel';
    else continue;
    seen++;
  }
  if (seen > 1) throw new Error('more than one timer effect in one apply');
  return timer;
}
