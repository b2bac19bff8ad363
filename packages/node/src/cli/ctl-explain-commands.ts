/**
 * `styx ctl explain_dead_lettering QUEUE [-p vhost]`: what happens right now to a message leaving
 * QUEUE for each of the four reasons, from the node's `GET /api/queues/{vhost}/{name}/dead-lettering`
 * (dlx-explain.ts). Prints it as text, or the node's JSON with `--formatter json`. Exits 0 whatever
 * it finds: the warnings are part of the answer (a broken topology is what one runs it to see).
 */
import type { DeadLetterExplanation, Setting, SettingSource } from '../dlx-explain.ts';
import type { CommandSpec } from './ctl-context.ts';
import { announce, arg } from './ctl-context.ts';

function sourceText(source: SettingSource): string {
  switch (source.from) {
    case 'argument':
      return 'from the queue argument';
    case 'policy':
      return `from policy '${source.policy}'`;
    case 'smaller_of_both':
      return `the smaller of the queue argument and policy '${source.policy}'`;
    case 'default':
      return 'default';
  }
}

function settingLine(label: string, setting: Setting<string | number>, unit = ''): string {
  const value = setting.value === null ? 'none' : `${setting.value}${unit}`;
  return `  ${label.padEnd(24)}${value}  (${sourceText(setting.source)})`;
}

/** `e` as text, one section per part (pure, for the tests). */
export function explanationText(e: DeadLetterExplanation): string {
  const lines: string[] = [];
  lines.push(`Queue '${e.queue}' in vhost '${e.vhost}' (${e.durable ? 'durable' : 'transient'})`);
  lines.push(`  ${'policy'.padEnd(24)}${e.policy === null ? 'none' : e.policy}`);
  const dlx = e.dead_letter_exchange;
  const dlxText =
    dlx.value === null
      ? 'none'
      : `'${dlx.value}'${dlx.value === '' ? ' (default exchange)' : ''}${dlx.exists ? ` (${dlx.type}, exists)` : ' (DOES NOT EXIST)'}`;
  lines.push(`  ${'dead-letter-exchange'.padEnd(24)}${dlxText}  (${sourceText(dlx.source)})`);
  const dlk = e.dead_letter_routing_key;
  lines.push(
    dlk.value === null && dlx.value !== null
      ? `  ${'dead-letter-routing-key'.padEnd(24)}none: each message's own routing keys (incl. CC and BCC)  (${sourceText(dlk.source)})`
      : settingLine('dead-letter-routing-key', dlk),
  );
  lines.push(
    `  ${'dead-letter-strategy'.padEnd(24)}${e.strategy.value}${e.strategy.effective === 'none' ? ' (no DLX: not used)' : ''}  (${sourceText(e.strategy.source)})`,
  );
  lines.push(settingLine('overflow', e.overflow));
  lines.push(settingLine('message-ttl', e.limits.message_ttl, ' ms'));
  lines.push(settingLine('max-length', e.limits.max_length));
  lines.push(settingLine('max-length-bytes', e.limits.max_length_bytes));
  lines.push(settingLine('delivery-limit', e.limits.delivery_limit));
  lines.push(settingLine('expires', e.limits.expires, ' ms'));

  if (e.routing.uses !== 'none') {
    lines.push('', 'Routes of dead-lettered copies:');
    if (e.routing.depends_on_headers)
      lines.push("  (a headers exchange decides: the routes depend on each message's headers)");
    for (const r of e.routing.routes) {
      const keys =
        r.keys === null ? `any key matching '${r.via?.binding_key}'` : r.keys.map((k) => `'${k}'`).join(', ');
      const why =
        r.key_source === 'dead_letter_routing_key'
          ? 'the dead-letter routing key'
          : r.key_source === 'default_exchange'
            ? 'published to the queue by name'
            : `arrived through exchange '${r.via?.exchange}'`;
      const to =
        r.queues === null
          ? 'depends on the message'
          : r.queues.length === 0
            ? 'NO QUEUE'
            : r.queues.join(', ');
      lines.push(`  key ${keys} (${why}) -> ${to}`);
    }
  }

  lines.push('', 'Per reason:');
  for (const r of e.reasons) {
    lines.push(`  ${r.reason.padEnd(16)}${r.what_happens}`);
    if (r.can_trigger) lines.push(`  ${''.padEnd(16)}when ${r.when}`);
    for (const c of r.cycles) {
      const path = `${c.path.map((h) => `${h.queue} (${h.reason})`).join(' -> ')} -> ${c.closes_at}`;
      lines.push(
        `  ${''.padEnd(16)}cycle ${path}: ${c.dropped ? 'DROPPED there (no rejection in it)' : 'kept (a rejection is in it)'}`,
      );
    }
    if (r.cycles_truncated) lines.push(`  ${''.padEnd(16)}(more paths than were followed)`);
  }

  lines.push('', e.warnings.length === 0 ? 'No warnings.' : 'Warnings:');
  for (const w of e.warnings) lines.push(`  ${w.severity.toUpperCase().padEnd(8)}${w.code}: ${w.message}`);
  return `${lines.join('\n')}\n`;
}

export const EXPLAIN_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  explain_dead_lettering: {
    usage: '[-p vhost] QUEUE',
    summary:
      'explain what happens right now to a message leaving QUEUE for each reason (rejected, expired, ' +
      'maxlen, delivery_limit): the effective dead-letter exchange, routing key, strategy and limits ' +
      'and where each came from (argument or policy), where the copies are routed, dead-letter ' +
      'cycles, and warnings for broken topologies',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const queue = arg(args, 0);
      announce(ctx, `Explaining dead-lettering for queue ${queue} in vhost ${ctx.vhost} ...`);
      const body = await ctx.request('GET', ['queues', ctx.vhost, queue, 'dead-lettering']);
      if (ctx.json) ctx.io.stdout(`${JSON.stringify(body, null, 2)}\n`);
      else ctx.io.stdout(explanationText(body as DeadLetterExplanation));
    },
  },
};
