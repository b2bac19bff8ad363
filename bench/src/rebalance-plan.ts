/**
 * `node bench/src/rebalance-plan.ts`: how long the metadata leader's rebalance plan takes
 * (`rebalanceLeaders`), one event-loop turn, when a node comes back to a cluster whose other members
 * lead every queue: 3 nodes with a replica of every queue on each, and 5 nodes with 3 replicas per
 * queue, at 1,000 to 50,000 queues. The median of 5 plans each, after one warm-up plan.
 */

import type { Assignment } from '@styx/node/internal/cluster';
import { rebalanceLeaders } from '@styx/node/internal/cluster';

const USAGE = `Usage: node bench/src/rebalance-plan.ts [-h|--help]

Times the rebalance plan of a node's return (3 and 5 nodes; 1,000, 10,000 and 50,000 queues).`;

if (process.argv.includes('-h') || process.argv.includes('--help')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}

/** Every queue led by a member other than n0 (n0 just came back); replicas all (3 nodes) or 3 in a ring (5). */
function returning(nodes: number, queues: number): Assignment {
  const ids = Array.from({ length: nodes }, (_, i) => `n${i}`);
  const assignment = new Map<string, { replicas: readonly string[]; leader: string }>();
  for (let q = 0; q < queues; q++) {
    const replicas = nodes === 3 ? ids : [0, 1, 2].map((k) => ids[(q + k) % nodes] as string);
    const others = replicas.filter((id) => id !== 'n0');
    assignment.set(`["/","q${q}"]`, { replicas, leader: others[q % others.length] as string });
  }
  return assignment;
}

for (const nodes of [3, 5]) {
  for (const queues of [1_000, 10_000, 50_000]) {
    const assignment = returning(nodes, queues);
    const members = Array.from({ length: nodes }, (_, i) => ({ id: `n${i}` }));
    let transfers = rebalanceLeaders({ members, assignment }).length;
    const times: number[] = [];
    for (let run = 0; run < 5; run++) {
      const start = performance.now();
      transfers = rebalanceLeaders({ members, assignment }).length;
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const median = (times[2] as number).toFixed(1);
    process.stdout.write(
      `${nodes} nodes, ${queues} queues: ${transfers} transfers planned in ${median} ms\n`,
    );
  }
}
