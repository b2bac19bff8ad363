/**
 * Redrives (moving messages out of a dead-letter queue, redrive/) as the metadata group's audit
 * records have them. Every node applies the metadata log, so every node writes the same figures:
 * a dashboard takes `max()` across a cluster's nodes, not `sum()`. The audit keeps the latest
 * records only (`MAX_REDRIVE_RECORDS`), so these are gauges over the kept records, not counters.
 */
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { REDRIVE_STATES } from '../metadata/redrive-types.ts';
import type { ExpositionWriter } from './exposition-writer.ts';

export function writeRedrives(w: ExpositionWriter, metadata: MetadataMachine): void {
  const byState = new Map<string, number>(REDRIVE_STATES.map((state) => [state, 0]));
  let moved = 0;
  let failed = 0;
  for (const record of metadata.redriveRecords()) {
    byState.set(record.state, (byState.get(record.state) ?? 0) + 1);
    if (record.dryRun) continue;
    moved += record.progress.moved;
    failed += record.progress.failed;
  }
  w.family(
    'styx_redrives',
    'gauge',
    'Redrives in the audit, per state (the same on every node of a cluster)',
  );
  for (const [state, count] of byState) w.sample(`state="${state}"`, count);
  w.single(
    'styx_redrive_messages_moved',
    'gauge',
    'Messages the redrives in the audit moved out of their dead-letter queues (dry runs not counted)',
    moved,
  );
  w.single(
    'styx_redrive_messages_failed',
    'gauge',
    'Messages the redrives in the audit left in their dead-letter queues (no route, refused, no source)',
    failed,
  );
}
