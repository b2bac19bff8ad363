// Checkers over a finished history: pure functions of the ops (no broker, no clock), so each is shown
// to fail on small synthetic histories in checkers.test.ts.
//
// - total queue: every confirmed message was consumed (acked) somewhere — its queue, or its queue's
//   dead-letter queue — by the end of the drain; nothing delivered that was never published or that
//   landed in a queue it could not reach; duplicates counted, not failed (at-least-once allows them).
// - dead letter: every confirmed message meant to be rejected or to expire is in its DLQ, and every
//   dead-lettered delivery carries an x-death naming the source queue and the right reason.
// - order: per publisher, channel and queue, first deliveries come in publish order; a redelivered
//   message, and one seen before, may come out of order (that is what "except around redeliveries"
//   means), and so may messages of different channels (AMQP orders per channel only).
// - redelivery flag: a message delivered again from the same queue must come with redelivered=true
//   (AMQP 0-9-1, basic.deliver: the flag says the message "may have been previously delivered").
//   Dead-letter queues are counted, not failed: at-least-once dead-lettering may hand the same
//   message over twice, and each copy is a first delivery of a new message there.
// - replica check: at the end of a run each node's GET /api/checks/queues (recorded in the history)
//   answered ok; a node that has no such endpoint yet (404) is reported as unchecked, not passed.
import type { Intent, Op } from './history.ts';
import { parseId } from './history.ts';

export interface CheckTopology {
  /** Source queue → the queue its dead letters are routed to. */
  readonly deadLetterQueues: Readonly<Record<string, string>>;
  /** Queues with a single consumer at a time, whose delivery order is checked. */
  readonly orderedQueues: readonly string[];
}

export interface Problem {
  readonly checker: 'total-queue' | 'dead-letter' | 'order' | 'redelivery' | 'replica-check';
  readonly kind: string;
  readonly id?: string;
  readonly queue?: string;
  readonly detail: string;
  /** Another message the problem involves (the one an out-of-order message came after). */
  readonly otherId?: string;
}

export interface CheckResult {
  readonly checker: Problem['checker'];
  readonly valid: boolean;
  readonly counts: Readonly<Record<string, number>>;
  readonly problems: readonly Problem[];
}

type Outcome = 'ok' | 'fail' | 'unknown' | 'pending';

interface Published {
  readonly id: string;
  readonly process: string;
  readonly queue: string;
  readonly intent: Intent;
  outcome: Outcome;
}

/** The publishes of a history, by message id, with how each ended. */
export function publishes(ops: readonly Op[]): Map<string, Published> {
  const byId = new Map<string, Published>();
  for (const op of ops) {
    if (op.f !== 'publish' || op.id === undefined) continue;
    if (op.type === 'invoke')
      byId.set(op.id, {
        id: op.id,
        process: op.process,
        queue: op.queue ?? '',
        intent: op.intent ?? 'ack',
        outcome: 'pending',
      });
    else {
      const published = byId.get(op.id);
      if (published !== undefined && op.type !== 'info') published.outcome = op.type;
    }
  }
  return byId;
}

const key = (queue: string, id: string): string => `${queue}\u0000${id}`;

export function checkTotalQueue(ops: readonly Op[], topology: CheckTopology): CheckResult {
  const published = publishes(ops);
  const problems: Problem[] = [];
  const acked = new Map<string, number>(); // per queue and id
  const ackedAnywhere = new Set<string>();
  const delivered = new Set<string>();
  let deliveries = 0;
  let redeliveries = 0;
  let duplicates = 0;
  let afterAck = 0;
  let nackedDelivered = 0;
  const nackedSeen = new Set<string>();
  for (const op of ops) {
    if (op.id === undefined || op.queue === undefined) continue;
    if (op.f === 'deliver' && op.type === 'ok') {
      deliveries++;
      if (op.redelivered === true) redeliveries++;
      const message = published.get(op.id);
      if (message === undefined) {
        problems.push({
          checker: 'total-queue',
          kind: 'unexpected',
          id: op.id,
          queue: op.queue,
          detail: 'delivered, but no publisher ever sent this id',
        });
        continue;
      }
      const allowed = [message.queue, topology.deadLetterQueues[message.queue]];
      if (!allowed.includes(op.queue)) {
        problems.push({
          checker: 'total-queue',
          kind: 'unexpected',
          id: op.id,
          queue: op.queue,
          detail: `published to ${message.queue} but delivered from ${op.queue}`,
        });
      }
      if (message.outcome === 'fail' && !nackedSeen.has(op.id)) {
        nackedSeen.add(op.id);
        nackedDelivered++;
      }
      if ((acked.get(key(op.queue, op.id)) ?? 0) > 0) afterAck++;
      delivered.add(op.id);
    } else if (op.f === 'ack' && op.type === 'ok') {
      const k = key(op.queue, op.id);
      const n = (acked.get(k) ?? 0) + 1;
      acked.set(k, n);
      if (n > 1) duplicates++;
      ackedAnywhere.add(op.id);
    }
  }
  let confirmed = 0;
  let failed = 0;
  let unknown = 0;
  let unknownConsumed = 0;
  for (const message of published.values()) {
    if (message.outcome === 'ok') {
      confirmed++;
      if (!ackedAnywhere.has(message.id))
        problems.push({
          checker: 'total-queue',
          kind: 'lost',
          id: message.id,
          queue: message.queue,
          detail: delivered.has(message.id)
            ? 'confirmed and delivered, but never acked anywhere (not in any queue at the end)'
            : 'confirmed, never delivered from any queue',
        });
    } else if (message.outcome === 'fail') failed++;
    else {
      unknown++;
      if (ackedAnywhere.has(message.id)) unknownConsumed++;
    }
  }
  const lost = problems.filter((p) => p.kind === 'lost').length;
  return {
    checker: 'total-queue',
    valid: problems.length === 0,
    counts: {
      attempted: published.size,
      confirmed,
      failed,
      unknown,
      unknownConsumed,
      deliveries,
      redeliveries,
      lost,
      unexpected: problems.length - lost,
      duplicates,
      redeliveredAfterAck: afterAck,
      nackedButDelivered: nackedDelivered,
    },
    problems,
  };
}

const REASON: Partial<Record<Intent, string>> = { reject: 'rejected', expire: 'expired' };

export function checkDeadLetters(ops: readonly Op[], topology: CheckTopology): CheckResult {
  const published = publishes(ops);
  const dlqs = new Set(Object.values(topology.deadLetterQueues));
  const problems: Problem[] = [];
  const inDlq = new Set<string>(); // acked from the right DLQ
  let deadLettered = 0;
  for (const op of ops) {
    if (op.id === undefined || op.queue === undefined || !dlqs.has(op.queue)) continue;
    const message = published.get(op.id);
    if (message === undefined) continue; // the total-queue checker reports it
    if (op.f === 'ack' && op.type === 'ok') {
      if (topology.deadLetterQueues[message.queue] === op.queue) inDlq.add(op.id);
      continue;
    }
    if (op.f !== 'deliver' || op.type !== 'ok') continue;
    deadLettered++;
    const reason = REASON[message.intent];
    if (reason === undefined) {
      problems.push({
        checker: 'dead-letter',
        kind: 'unexpected-dead-letter',
        id: op.id,
        queue: op.queue,
        detail: `meant to be acked from ${message.queue}, yet dead-lettered`,
      });
      continue;
    }
    const wrong = xDeathProblem(op, message.queue, reason);
    if (wrong !== undefined)
      problems.push({
        checker: 'dead-letter',
        kind: 'bad-x-death',
        id: op.id,
        queue: op.queue,
        detail: wrong,
      });
  }
  let expected = 0;
  for (const message of published.values()) {
    if (message.outcome !== 'ok' || REASON[message.intent] === undefined) continue;
    expected++;
    const dlq = topology.deadLetterQueues[message.queue];
    if (!inDlq.has(message.id))
      problems.push({
        checker: 'dead-letter',
        kind: 'missing-dead-letter',
        id: message.id,
        queue: message.queue,
        detail: `confirmed, meant to be ${REASON[message.intent]}, never consumed from ${dlq ?? '(no DLQ)'}`,
      });
  }
  return {
    checker: 'dead-letter',
    valid: problems.length === 0,
    counts: {
      expected,
      deadLettered,
      missing: problems.filter((p) => p.kind === 'missing-dead-letter').length,
      badXDeath: problems.filter((p) => p.kind === 'bad-x-death').length,
      unexpected: problems.filter((p) => p.kind === 'unexpected-dead-letter').length,
    },
    problems,
  };
}

/** What is wrong with a dead-lettered delivery's x-death, or undefined when it is right. */
function xDeathProblem(op: Op, source: string, reason: string): string | undefined {
  const death = op.death;
  if (death === undefined || death === null) return 'no x-death header';
  if (death.entries < 1) return 'x-death is empty';
  if (death.queue !== source) return `x-death queue ${String(death.queue)}, expected ${source}`;
  if (death.reason !== reason) return `x-death reason ${String(death.reason)}, expected ${reason}`;
  if (typeof death.count !== 'number' || death.count < 1) return `x-death count ${String(death.count)}`;
  if (typeof death.exchange !== 'string') return 'x-death has no exchange';
  if (!Array.isArray(death.routingKeys) || !death.routingKeys.includes(source))
    return `x-death routing-keys ${JSON.stringify(death.routingKeys)} lack ${source}`;
  if (death.firstQueue !== source) return `x-first-death-queue ${String(death.firstQueue)}`;
  if (death.firstReason !== reason) return `x-first-death-reason ${String(death.firstReason)}`;
  return undefined;
}

export function checkOrder(ops: readonly Op[], topology: CheckTopology): CheckResult {
  const problems: Problem[] = [];
  let checked = 0;
  let skipped = 0;
  // AMQP orders a publisher's messages per channel: one sent on a channel that died (its confirm
  // unknown) may land after those of the next channel, so each channel is its own sequence.
  const channelOf = new Map<string, number>();
  for (const op of ops)
    if (op.f === 'publish' && op.type === 'invoke' && op.id !== undefined && op.channel !== undefined)
      channelOf.set(op.id, op.channel);
  for (const queue of topology.orderedQueues) {
    const seen = new Set<string>();
    const highest = new Map<string, { seq: number; id: string }>(); // per publisher and channel
    for (const op of ops) {
      if (op.f !== 'deliver' || op.type !== 'ok' || op.queue !== queue || op.id === undefined) continue;
      const parsed = parseId(op.id);
      if (parsed === undefined) continue;
      const stream = `${parsed.process}#${channelOf.get(op.id) ?? 0}`;
      if (seen.has(op.id) || op.redelivered === true) {
        skipped++;
        seen.add(op.id);
        continue;
      }
      seen.add(op.id);
      checked++;
      const top = highest.get(stream);
      if (top !== undefined && parsed.seq < top.seq)
        problems.push({
          checker: 'order',
          kind: 'out-of-order',
          id: op.id,
          queue,
          otherId: top.id,
          detail: `first delivered after ${top.id}, though published before it, and not marked redelivered`,
        });
      else highest.set(stream, { seq: parsed.seq, id: op.id });
    }
  }
  return {
    checker: 'order',
    valid: problems.length === 0,
    counts: { checked, skippedRedeliveries: skipped, outOfOrder: problems.length },
    problems,
  };
}

export function checkRedelivered(ops: readonly Op[], topology: CheckTopology): CheckResult {
  const problems: Problem[] = [];
  const dlqs = new Set(Object.values(topology.deadLetterQueues));
  const seen = new Set<string>(); // per queue and id
  let again = 0;
  let flagged = 0;
  let dlqCopies = 0;
  let requeued = 0;
  for (const op of ops) {
    if (op.f === 'requeue' && op.type === 'ok') requeued++;
    if (op.f !== 'deliver' || op.type !== 'ok' || op.id === undefined || op.queue === undefined) continue;
    const k = key(op.queue, op.id);
    if (!seen.has(k)) {
      seen.add(k);
      continue;
    }
    again++;
    if (op.redelivered === true) {
      flagged++;
      continue;
    }
    if (dlqs.has(op.queue)) {
      dlqCopies++;
      continue;
    }
    problems.push({
      checker: 'redelivery',
      kind: 'redelivered-unflagged',
      id: op.id,
      queue: op.queue,
      detail: `delivered again from ${op.queue} (by ${op.process}) without the redelivered flag`,
    });
  }
  return {
    checker: 'redelivery',
    valid: problems.length === 0,
    counts: {
      requeued,
      deliveredAgain: again,
      flagged,
      unflagged: problems.length,
      dlqUnflaggedCopies: dlqCopies,
    },
    problems,
  };
}

/** One node's answer to GET /api/checks/queues, as the harness records it (f 'replica-check'). */
export interface ReplicaCheckAnswer {
  readonly node: string;
  /** HTTP status; 0 when the node did not answer at all. */
  readonly status: number;
  readonly ok?: boolean;
  /** Each queue the node called not ok, with its problems. */
  readonly bad?: readonly {
    readonly vhost?: string;
    readonly name?: string;
    readonly problems?: readonly string[];
  }[];
  readonly error?: string;
}

/**
 * The nodes' own replica checks at the end of a run. Valid when every answer is ok; a 404 (the
 * endpoint does not exist on this build) is counted as `unavailable`, and a run with no check at all
 * says so in its counts; neither fails the run, both are printed.
 */
export function checkReplicas(ops: readonly Op[]): CheckResult {
  const problems: Problem[] = [];
  let ok = 0;
  let unavailable = 0;
  let answers = 0;
  for (const op of ops) {
    if (op.f !== 'replica-check') continue;
    answers++;
    const answer = op.value as ReplicaCheckAnswer;
    if (answer.status === 404) unavailable++;
    else if (answer.status === 200 && answer.ok === true) ok++;
    else if (answer.bad !== undefined && answer.bad.length > 0)
      for (const queue of answer.bad)
        problems.push({
          checker: 'replica-check',
          kind: 'replica-not-ok',
          queue: queue.name ?? '?',
          detail: `${answer.node} (HTTP ${answer.status}): ${(queue.problems ?? []).join('; ') || 'not ok'}`,
        });
    else
      problems.push({
        checker: 'replica-check',
        kind: 'replica-check-failed',
        detail: `${answer.node}: HTTP ${answer.status}${answer.error === undefined ? '' : ` ${answer.error}`}`,
      });
  }
  return {
    checker: 'replica-check',
    valid: problems.length === 0,
    counts: { nodes: answers, ok, unavailable, notOk: problems.length },
    problems,
  };
}

export function checkAll(ops: readonly Op[], topology: CheckTopology): CheckResult[] {
  return [
    checkTotalQueue(ops, topology),
    checkDeadLetters(ops, topology),
    checkOrder(ops, topology),
    checkRedelivered(ops, topology),
    checkReplicas(ops),
  ];
}

/**
 * The smallest slice of the history that shows a problem: every op on its message(s), the same
 * publisher's neighbouring messages on that queue, and the faults around them; at most `max` ops.
 */
export function windowFor(ops: readonly Op[], problem: Problem, max = 40): Op[] {
  const ids = new Set([problem.id, problem.otherId].filter((id): id is string => id !== undefined));
  const neighbours = new Set<string>();
  for (const id of ids) {
    const parsed = parseId(id);
    if (parsed === undefined) continue;
    for (const d of [-1, 1]) neighbours.add(`${parsed.process}:${parsed.seq + d}`);
  }
  const own = ops.filter((op) => op.id !== undefined && ids.has(op.id));
  if (own.length === 0) return [];
  const from = (own[0] as Op).time - 10_000;
  const to = (own.at(-1) as Op).time + 10_000;
  const picked = ops.filter(
    (op) =>
      (op.id !== undefined && (ids.has(op.id) || neighbours.has(op.id))) ||
      ((op.f === 'fault' || op.f === 'heal' || op.f === 'step') && op.time >= from && op.time <= to),
  );
  if (picked.length <= max) return picked;
  // Too long: keep the problem's own ops and the faults, then as many neighbours as fit.
  const essential = picked.filter(
    (op) => (op.id !== undefined && ids.has(op.id)) || op.process === 'nemesis',
  );
  const rest = picked.filter((op) => !essential.includes(op)).slice(0, Math.max(0, max - essential.length));
  return [...essential, ...rest].sort((a, b) => a.index - b.index);
}

/** One line per op, for a failure report. */
export function formatOp(op: Op): string {
  const parts = [
    `${(op.time / 1000).toFixed(3)}s`,
    `#${op.index}`,
    op.process,
    op.type,
    op.f,
    op.queue ?? '',
    op.id ?? '',
    op.intent !== undefined && op.f === 'publish' && op.type === 'invoke' ? `intent=${op.intent}` : '',
    op.redelivered === true ? 'redelivered' : '',
    op.death !== undefined ? `x-death=${JSON.stringify(op.death)}` : '',
    op.value !== undefined ? JSON.stringify(op.value) : '',
  ];
  return parts.filter((p) => p !== '').join(' ');
}
