import type { FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { DeadLetterExplanation, WarningCode } from './dlx-explain.ts';
import { ExplainQueueNotFoundError, explainDeadLettering, metadataTopology } from './dlx-explain.ts';
import type { ExchangeType } from './metadata/types.ts';
import { Fixture, table } from './router/test-support.ts';

/** A real metadata machine with vhost '/', and the explanation of its queues. */
class Topology {
  readonly f = new Fixture();

  queue(name: string, args: Record<string, FieldValue> = {}, durable = true): this {
    this.f.run({
      type: 'declareQueue',
      vhost: '/',
      name,
      durable,
      exclusiveOwner: undefined,
      autoDelete: false,
      arguments: table(args),
      groupId: name,
      serverNamed: false,
    });
    return this;
  }

  exchange(name: string, type: ExchangeType): this {
    this.f.exchange(name, type);
    return this;
  }

  bind(exchange: string, queue: string, key = ''): this {
    this.f.bind(exchange, queue, key);
    return this;
  }

  policy(name: string, pattern: string, definition: Record<string, unknown>, priority = 0): this {
    this.f.run({ type: 'setPolicy', vhost: '/', name, pattern, applyTo: 'queues', priority, definition });
    return this;
  }

  explain(queue: string): DeadLetterExplanation {
    return explainDeadLettering(metadataTopology(this.f.m), '/', queue);
  }
}

const str = (s: string): FieldValue => ({ longStr: s });
const int = (n: number): FieldValue => ({ i32: n });
const DLX = (name: string): Record<string, FieldValue> => ({ 'x-dead-letter-exchange': str(name) });

function codes(e: DeadLetterExplanation): WarningCode[] {
  return e.warnings.map((w) => w.code);
}

function reason(e: DeadLetterExplanation, r: string) {
  const found = e.reasons.find((x) => x.reason === r);
  if (found === undefined) throw new Error(`no reason ${r}`);
  return found;
}

describe('sources of each setting', () => {
  it('argument: the declare argument, even over a policy', () => {
    const t = new Topology()
      .exchange('dlx.arg', 'fanout')
      .exchange('dlx.pol', 'fanout')
      .policy('P', '^work$', { 'dead-letter-exchange': 'dlx.pol', 'dead-letter-routing-key': 'from-policy' })
      .queue('work', { ...DLX('dlx.arg'), 'x-dead-letter-strategy': str('at-most-once') });
    const e = t.explain('work');
    expect(e.policy).toBe('P');
    expect(e.dead_letter_exchange).toEqual({
      value: 'dlx.arg',
      source: { from: 'argument', policy: null },
      exists: true,
      type: 'fanout',
    });
    // The DLK is decided on its own: the policy's, as the queue has no argument for it.
    expect(e.dead_letter_routing_key).toEqual({
      value: 'from-policy',
      source: { from: 'policy', policy: 'P' },
    });
    expect(e.strategy).toMatchObject({
      value: 'at-most-once',
      source: { from: 'argument', policy: null },
      effective: 'at-most-once',
    });
  });

  it('policy: the policy that applies, by name', () => {
    const t = new Topology()
      .exchange('dlx', 'fanout')
      .policy('DLX', '.*', { 'dead-letter-exchange': 'dlx', overflow: 'reject-publish' })
      .queue('work');
    const e = t.explain('work');
    expect(e.dead_letter_exchange.source).toEqual({ from: 'policy', policy: 'DLX' });
    expect(e.overflow).toEqual({ value: 'reject-publish', source: { from: 'policy', policy: 'DLX' } });
    expect(e.dead_letter_routing_key).toEqual({ value: null, source: { from: 'default', policy: null } });
  });

  it('default: nothing set; the strategy defaults to at-least-once when durable, at-most-once when not', () => {
    const t = new Topology().queue('durable.q').queue('transient.q', {}, false);
    const durable = t.explain('durable.q');
    expect(durable.policy).toBeNull();
    expect(durable.dead_letter_exchange).toEqual({
      value: null,
      source: { from: 'default', policy: null },
      exists: null,
      type: null,
    });
    expect(durable.strategy).toMatchObject({
      value: 'at-least-once',
      source: { from: 'default' },
      effective: 'none',
    });
    expect(t.explain('transient.q').strategy.value).toBe('at-most-once');
  });

  it('limits: the smaller of argument and policy, said as such', () => {
    const t = new Topology()
      .policy('L', '.*', { 'message-ttl': 5000, 'max-length': 100, 'delivery-limit': 3 })
      .queue('work', { 'x-message-ttl': int(60000), 'x-max-length-bytes': int(1000) });
    const { limits } = t.explain('work');
    expect(limits.message_ttl).toEqual({ value: 5000, source: { from: 'smaller_of_both', policy: 'L' } });
    expect(limits.max_length).toEqual({ value: 100, source: { from: 'policy', policy: 'L' } });
    expect(limits.max_length_bytes).toEqual({ value: 1000, source: { from: 'argument', policy: null } });
    expect(limits.delivery_limit).toEqual({ value: 3, source: { from: 'policy', policy: 'L' } });
    expect(limits.expires).toEqual({ value: null, source: { from: 'default', policy: null } });
  });

  it('refuses an unknown queue', () => {
    expect(() => new Topology().explain('nope')).toThrow(ExplainQueueNotFoundError);
  });
});

describe('triggers', () => {
  it('rejected always; expired by the publisher without a TTL; maxlen and delivery_limit never without limits', () => {
    const e = new Topology()
      .exchange('dlx', 'fanout')
      .queue('dlq')
      .bind('dlx', 'dlq')
      .queue('work', DLX('dlx'))
      .explain('work');
    expect(e.reasons.map((r) => [r.reason, r.trigger, r.outcome])).toEqual([
      ['rejected', 'consumer', 'dead_lettered'],
      ['expired', 'publisher', 'dead_lettered'],
      ['maxlen', 'never', 'not_applicable'],
      ['delivery_limit', 'never', 'not_applicable'],
    ]);
  });

  it('the queue triggers expired, maxlen (drop-head) and delivery_limit when configured', () => {
    const e = new Topology()
      .queue('work', { 'x-message-ttl': int(1000), 'x-max-length': int(10), 'x-delivery-limit': int(5) })
      .explain('work');
    expect(reason(e, 'expired')).toMatchObject({
      trigger: 'queue',
      when: expect.stringContaining('1000 ms'),
    });
    expect(reason(e, 'maxlen')).toMatchObject({ trigger: 'queue', when: expect.stringContaining('oldest') });
    expect(reason(e, 'delivery_limit')).toMatchObject({
      trigger: 'queue',
      when: expect.stringContaining('5 times'),
    });
    // No DLX: each is dropped.
    expect(e.reasons.every((r) => r.outcome === 'dropped')).toBe(true);
  });

  it('maxlen: reject-publish never dead-letters, reject-publish-dlx dead-letters the refused publish', () => {
    const t = new Topology()
      .queue('rp', { 'x-max-length': int(1), 'x-overflow': str('reject-publish') })
      .queue('rpdlx', { 'x-max-length-bytes': int(1), 'x-overflow': str('reject-publish-dlx') });
    expect(reason(t.explain('rp'), 'maxlen')).toMatchObject({ can_trigger: false, trigger: 'never' });
    expect(reason(t.explain('rpdlx'), 'maxlen')).toMatchObject({
      can_trigger: true,
      when: expect.stringContaining('refused'),
    });
  });
});

describe('routing', () => {
  it('with a DLK: every copy goes where the DLK routes', () => {
    const e = new Topology()
      .exchange('dlx', 'direct')
      .queue('dlq')
      .bind('dlx', 'dlq', 'dead')
      .queue('work', { ...DLX('dlx'), 'x-dead-letter-routing-key': str('dead') })
      .explain('work');
    expect(e.routing).toEqual({
      uses: 'dead_letter_routing_key',
      depends_on_headers: false,
      routes: [{ keys: ['dead'], key_source: 'dead_letter_routing_key', via: null, queues: ['dlq'] }],
    });
    expect(codes(e)).not.toContain('dead_letter_exchange_routes_nowhere');
  });

  it("without a DLK: the message's own keys, worked out for the keys that bring messages here", () => {
    const e = new Topology()
      .exchange('orders', 'direct')
      .exchange('events', 'topic')
      .exchange('all', 'fanout')
      .exchange('dlx', 'direct')
      .queue('dlq.created')
      .queue('dlq.work')
      .bind('dlx', 'dlq.created', 'order.created')
      .bind('dlx', 'dlq.work', 'work')
      .queue('work', DLX('dlx'))
      .bind('orders', 'work', 'order.created')
      .bind('events', 'work', 'order.*')
      .bind('events', 'work', 'order.paid')
      .bind('all', 'work')
      .explain('work');
    expect(e.routing.uses).toBe('message_keys');
    expect(e.routing.routes).toEqual([
      {
        keys: ['work'],
        key_source: 'default_exchange',
        via: { exchange: '', binding_key: 'work' },
        queues: ['dlq.work'],
      },
      {
        keys: ['order.created'],
        key_source: 'binding',
        via: { exchange: 'orders', binding_key: 'order.created' },
        queues: ['dlq.created'],
      },
      {
        keys: null,
        key_source: 'binding_pattern',
        via: { exchange: 'events', binding_key: 'order.*' },
        queues: null,
      },
      {
        keys: ['order.paid'],
        key_source: 'binding',
        via: { exchange: 'events', binding_key: 'order.paid' },
        queues: [],
      },
      { keys: null, key_source: 'binding_pattern', via: { exchange: 'all', binding_key: '' }, queues: null },
    ]);
    expect(reason(e, 'rejected').what_happens).toMatch(/own routing keys \(incl\. CC and BCC\)/);
  });

  it('a fanout DLX routes whatever the key, a headers DLX depends on the headers', () => {
    const fan = new Topology()
      .exchange('x', 'fanout')
      .exchange('dlx', 'fanout')
      .queue('dlq')
      .bind('dlx', 'dlq');
    fan.queue('work', DLX('dlx')).bind('x', 'work');
    expect(fan.explain('work').routing.routes.map((r) => r.queues)).toEqual([['dlq'], ['dlq']]);
    const hdr = new Topology()
      .exchange('dlx', 'headers')
      .queue('dlq')
      .bind('dlx', 'dlq')
      .queue('work', DLX('dlx'));
    const e = hdr.explain('work');
    expect(e.routing.depends_on_headers).toBe(true);
    expect(e.routing.routes.map((r) => r.queues)).toEqual([null]);
    expect(codes(e)).not.toContain('dead_letter_exchange_routes_nowhere');
  });
});

describe('warnings', () => {
  it('no_dead_letter_exchange: what can trigger is dropped', () => {
    const e = new Topology().queue('work', { 'x-message-ttl': int(10) }).explain('work');
    expect(e.warnings).toEqual([
      {
        code: 'no_dead_letter_exchange',
        severity: 'info',
        reasons: ['rejected', 'expired'],
        message: 'no dead-letter exchange: messages removed for rejected, expired are dropped',
      },
    ]);
  });

  it('dead_letter_exchange_missing: held at-least-once, dropped at-most-once', () => {
    const t = new Topology()
      .queue('alo', DLX('gone'))
      .queue('amo', { ...DLX('gone'), 'x-dead-letter-strategy': str('at-most-once') });
    const alo = t.explain('alo');
    expect(alo.dead_letter_exchange).toMatchObject({ value: 'gone', exists: false });
    expect(alo.warnings.find((w) => w.code === 'dead_letter_exchange_missing')).toMatchObject({
      severity: 'error',
      message: expect.stringContaining('wait in the queue (at-least-once)'),
    });
    expect(reason(alo, 'rejected').outcome).toBe('held');
    const amo = t.explain('amo');
    expect(amo.warnings.find((w) => w.code === 'dead_letter_exchange_missing')?.message).toMatch(
      /dropped \(at-most-once\)/,
    );
    expect(reason(amo, 'rejected').outcome).toBe('dropped');
    // Nothing routes, so no at-most-once "possible" loss on top of the certain one.
    expect(codes(amo)).not.toContain('at_most_once_loss_possible');
  });

  it('dead_letter_exchange_routes_nowhere, and for some keys only', () => {
    const nowhere = new Topology()
      .exchange('dlx', 'direct')
      .queue('work', { ...DLX('dlx'), 'x-dead-letter-routing-key': str('unbound') })
      .explain('work');
    expect(nowhere.warnings.find((w) => w.code === 'dead_letter_exchange_routes_nowhere')).toMatchObject({
      severity: 'error',
      message: expect.stringContaining("key 'unbound'"),
    });
    expect(reason(nowhere, 'rejected').outcome).toBe('held');
    const some = new Topology()
      .exchange('in', 'direct')
      .exchange('dlx', 'direct')
      .queue('dlq')
      .bind('dlx', 'dlq', 'work')
      .queue('work', DLX('dlx'))
      .bind('in', 'work', 'other-key')
      .explain('work');
    expect(
      some.warnings.find((w) => w.code === 'dead_letter_exchange_routes_nowhere_for_some_keys'),
    ).toMatchObject({
      severity: 'warning',
      message: expect.stringContaining("'other-key'"),
    });
    expect(codes(some)).not.toContain('dead_letter_exchange_routes_nowhere');
  });

  it("cycle_without_reject: the guide's default exchange without a DLK", () => {
    // Dead-lettered to '' with its own key 'work': straight back to 'work'.
    const e = new Topology().queue('work', { ...DLX(''), 'x-message-ttl': int(100) }).explain('work');
    expect(reason(e, 'expired').cycles).toEqual([
      { path: [{ queue: 'work', reason: 'expired' }], closes_at: 'work', dropped: true },
    ]);
    // A rejection is a consumer's decision: the copy comes back.
    expect(reason(e, 'rejected').cycles).toEqual([
      { path: [{ queue: 'work', reason: 'rejected' }], closes_at: 'work', dropped: false },
    ]);
    const cycleWarnings = e.warnings.filter((w) => w.code === 'cycle_without_reject');
    expect(cycleWarnings).toEqual([
      {
        code: 'cycle_without_reject',
        severity: 'warning',
        reasons: ['expired'],
        message:
          "cycle without a rejection: work (expired) -> work: the copy is dropped when it reaches 'work' again",
      },
    ]);
  });

  it('cycle_without_reject across queues; the retry pattern (reject, then TTL back) is kept', () => {
    const t = new Topology()
      .queue('work', { ...DLX(''), 'x-dead-letter-routing-key': str('retry'), 'x-message-ttl': int(60000) })
      .queue('retry', { ...DLX(''), 'x-dead-letter-routing-key': str('work'), 'x-message-ttl': int(1000) });
    const e = t.explain('work');
    expect(reason(e, 'rejected').cycles).toContainEqual({
      path: [
        { queue: 'work', reason: 'rejected' },
        { queue: 'retry', reason: 'expired' },
      ],
      closes_at: 'work',
      dropped: false,
    });
    expect(reason(e, 'expired').cycles).toContainEqual({
      path: [
        { queue: 'work', reason: 'expired' },
        { queue: 'retry', reason: 'expired' },
      ],
      closes_at: 'work',
      dropped: true,
    });
    const warned = e.warnings.filter((w) => w.code === 'cycle_without_reject').map((w) => w.reasons);
    expect(warned).toEqual([['expired']]);
  });

  it('at_most_once_loss_possible', () => {
    const e = new Topology()
      .exchange('dlx', 'fanout')
      .queue('dlq')
      .bind('dlx', 'dlq')
      .queue('work', { ...DLX('dlx'), 'x-dead-letter-strategy': str('at-most-once') })
      .explain('work');
    expect(e.warnings.find((w) => w.code === 'at_most_once_loss_possible')).toMatchObject({
      severity: 'warning',
      reasons: ['rejected', 'expired'],
    });
    expect(reason(e, 'rejected').what_happens).toBe(
      "dead-lettered at-most-once to 'dlx' with the message's own routing keys (incl. CC and BCC)",
    );
  });

  it('at_least_once_overflow: said for RabbitMQ, not with reject-publish', () => {
    const t = new Topology()
      .exchange('dlx', 'fanout')
      .queue('dlq')
      .bind('dlx', 'dlq')
      .queue('drop', DLX('dlx'))
      .queue('rp', { ...DLX('dlx'), 'x-overflow': str('reject-publish') });
    const drop = t.explain('drop');
    expect(drop.strategy).toMatchObject({ effective: 'at-least-once', rabbitmq_needs_reject_publish: true });
    expect(drop.warnings.find((w) => w.code === 'at_least_once_overflow')).toMatchObject({
      severity: 'info',
      message: expect.stringContaining('RabbitMQ would fall back to at-most-once'),
    });
    const rp = t.explain('rp');
    expect(rp.strategy.rabbitmq_needs_reject_publish).toBe(false);
    expect(codes(rp)).toEqual([]);
  });

  it('target_drops_silently: a DLQ that trims or expires with no DLX of its own', () => {
    const e = new Topology()
      .exchange('dlx', 'fanout')
      .queue('dlq', { 'x-max-length': int(1000), 'x-message-ttl': int(86400000) })
      .queue('safe.dlq', { 'x-max-length': int(10), 'x-overflow': str('reject-publish') })
      .bind('dlx', 'dlq')
      .bind('dlx', 'safe.dlq')
      .queue('work', { ...DLX('dlx'), 'x-overflow': str('reject-publish') })
      .explain('work');
    expect(e.warnings).toEqual([
      {
        code: 'target_drops_silently',
        severity: 'warning',
        reasons: ['rejected', 'expired'],
        message:
          "target queue 'dlq' drops its oldest messages over 1000 messages and expires messages after 86400000 ms with no dead-letter exchange of its own: dead-lettered messages can be lost there",
      },
    ]);
  });

  it('queue_expiry_discards_messages', () => {
    const e = new Topology().queue('work', { 'x-expires': int(60000) }).explain('work');
    expect(e.warnings.find((w) => w.code === 'queue_expiry_discards_messages')).toMatchObject({
      severity: 'info',
      message: expect.stringContaining('deleted, not dead-lettered'),
    });
  });

  it('a sound topology has no warnings', () => {
    const e = new Topology()
      .exchange('dlx', 'direct')
      .queue('dlq')
      .bind('dlx', 'dlq', 'dead')
      .queue('work', {
        ...DLX('dlx'),
        'x-dead-letter-routing-key': str('dead'),
        'x-overflow': str('reject-publish'),
      })
      .explain('work');
    expect(e.warnings).toEqual([]);
    expect(reason(e, 'rejected')).toMatchObject({
      outcome: 'dead_lettered',
      cycles: [],
      cycles_truncated: false,
    });
  });
});
