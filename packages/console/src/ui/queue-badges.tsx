// A queue's configuration as badges: DLX, DLK, strategy, TTL and limits, each saying whether it
// came from the queue's arguments or from which policy; then its dead-letter health.
import { badgeSettings } from './config-sources.ts';
import { count } from './format.ts';
import type { QueueInfo } from './model.ts';
import { REASONS, reasonTotal } from './model.ts';
import { Badge } from './widgets.tsx';

export function QueueBadges(props: { queue: QueueInfo }) {
  const q = props.queue;
  return (
    <span class="badges">
      {badgeSettings(q).map((s) => {
        const from =
          s.source === 'policy' ? `policy ${q.policy ?? ''}` : s.source === 'argument' ? 'arg' : 'default';
        return (
          <Badge
            key={s.label}
            kind={s.source}
            title={`${s.title}: ${String(s.value)} (from ${s.source === 'policy' ? `policy '${q.policy ?? ''}'` : s.source})`}
          >
            <span data-badge={s.label}>
              {s.label} {String(s.value)} ← {from}
            </span>
          </Badge>
        );
      })}
    </span>
  );
}

/** Dead-lettered counts by reason, as one line ('rejected 3 · expired 1'); '–' when none. */
export function ReasonCounts(props: { totals: QueueInfo['dead_lettered'] | undefined }) {
  const t = props.totals;
  if (t === undefined || reasonTotal(t) === 0) return <span class="muted">–</span>;
  return (
    <span class="reasons">
      {REASONS.filter((r) => t[r] > 0).map((r) => (
        <span key={r} class="reason">
          {r} {count(t[r])}
        </span>
      ))}
    </span>
  );
}
