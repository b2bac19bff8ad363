import type { NodeId } from '../types.ts';
import type { Prng } from './prng.ts';

/** How the network treats packets; the simulator changes these during a run. */
export interface NetworkFaults {
  /** Probability that a packet is lost. */
  dropRate: number;
  /** Probability that a packet is delivered twice (the copy with its own delay). */
  duplicateRate: number;
  /** Minimum one-way delay in ms. */
  delayMinMs: number;
  /** Mean of the exponential delay added to the minimum, in ms (random delays reorder packets). */
  delayMeanMs: number;
}

export const PartitionKind = {
  /** Two random halves (as even as possible). */
  Halves: 'halves',
  /** One node (often the leader) cut off from everyone, both ways. */
  Isolate: 'isolate',
  /** Nodes on a ring, each hearing only its two neighbours: overlapping majorities. */
  Ring: 'ring',
  /** One node can receive but not send (or the reverse). */
  OneWay: 'one-way',
  /** Two halves joined by one bridge node that hears both. */
  Bridge: 'bridge',
} as const;
export type PartitionKind = (typeof PartitionKind)[keyof typeof PartitionKind];

function linkKey(from: NodeId, to: NodeId): string {
  return `${from}>${to}`;
}

/**
 * The simulated network between replicas (after TigerBeetle's packet simulator): each packet gets a
 * delay of min + exponential(mean), so packets reorder; it may be dropped or duplicated; a partition
 * blocks directed links (checked at send and again at delivery, so packets in flight when a
 * partition starts are lost too); a clogged link holds its packets until the clog ends, then
 * delivers them late. Delivery itself is scheduled by the simulator through `deliver`.
 */
export class SimNetwork {
  readonly faults: NetworkFaults;
  readonly #prng: Prng;
  readonly #deliver: (at: number, from: NodeId, to: NodeId, bytes: Uint8Array) => void;
  #blocked = new Set<string>();
  #clogUntil = new Map<string, number>();
  partition: PartitionKind | undefined;
  /** Counters for the summary. */
  sent = 0;
  dropped = 0;
  duplicated = 0;

  constructor(
    prng: Prng,
    faults: NetworkFaults,
    deliver: (at: number, from: NodeId, to: NodeId, bytes: Uint8Array) => void,
  ) {
    this.#prng = prng;
    this.faults = faults;
    this.#deliver = deliver;
  }

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.#blocked.size > 0 && this.#blocked.has(linkKey(from, to));
  }

  send(now: number, from: NodeId, to: NodeId, bytes: Uint8Array): void {
    this.sent++;
    const faults = this.faults;
    if (this.isBlocked(from, to) || this.#prng.chance(faults.dropRate)) {
      this.dropped++;
      return;
    }
    this.#deliver(this.#arrival(now, from, to), from, to, bytes);
    if (this.#prng.chance(faults.duplicateRate)) {
      this.duplicated++;
      this.#deliver(this.#arrival(now, from, to), from, to, bytes);
    }
  }

  #arrival(now: number, from: NodeId, to: NodeId): number {
    const faults = this.faults;
    let at = now + faults.delayMinMs + this.#prng.exponential(faults.delayMeanMs);
    if (this.#clogUntil.size > 0) {
      const until = this.#clogUntil.get(linkKey(from, to));
      if (until !== undefined && until > now)
        at = Math.max(at, until + this.#prng.exponential(faults.delayMeanMs));
    }
    return at;
  }

  /** Stall the link from → to until `until` (ms); packets sent meanwhile arrive after it. */
  clog(from: NodeId, to: NodeId, until: number): void {
    this.#clogUntil.set(linkKey(from, to), until);
  }

  unclogAll(): void {
    this.#clogUntil.clear();
  }

  /**
   * Start a partition of `nodes`. `focus` is the node an Isolate/OneWay partition is about (e.g.
   * the leader); Halves, Ring and Bridge shuffle the nodes with the network's PRNG.
   */
  partitionNodes(kind: PartitionKind, nodes: readonly NodeId[], focus: NodeId | undefined): void {
    const blocked = new Set<string>();
    const block = (a: NodeId, b: NodeId): void => {
      blocked.add(linkKey(a, b));
      blocked.add(linkKey(b, a));
    };
    const shuffled = this.#prng.shuffle([...nodes]);
    switch (kind) {
      case PartitionKind.Halves: {
        const cut = 1 + this.#prng.nextInt(Math.max(1, shuffled.length - 1));
        const left = shuffled.slice(0, cut);
        const right = shuffled.slice(cut);
        for (const a of left) for (const b of right) block(a, b);
        break;
      }
      case PartitionKind.Isolate: {
        const alone = focus ?? (shuffled[0] as NodeId);
        for (const other of nodes) if (other !== alone) block(alone, other);
        break;
      }
      case PartitionKind.Ring: {
        const n = shuffled.length;
        for (let i = 0; i < n; i++) {
          for (let j = i + 1; j < n; j++) {
            const distance = Math.min(j - i, n - (j - i));
            if (distance > 1) block(shuffled[i] as NodeId, shuffled[j] as NodeId);
          }
        }
        break;
      }
      case PartitionKind.OneWay: {
        const node = focus ?? (shuffled[0] as NodeId);
        const outbound = this.#prng.chance(0.5);
        for (const other of nodes) {
          if (other === node) continue;
          blocked.add(outbound ? linkKey(node, other) : linkKey(other, node));
        }
        break;
      }
      case PartitionKind.Bridge: {
        // shuffled[0] is the bridge: it keeps its links to both sides.
        const rest = shuffled.slice(1);
        const cut = Math.max(1, rest.length >> 1);
        const left = rest.slice(0, cut);
        const right = rest.slice(cut);
        for (const a of left) for (const b of right) block(a, b);
        break;
      }
    }
    this.#blocked = blocked;
    this.partition = kind;
  }

  heal(): void {
    this.#blocked = new Set();
    this.partition = undefined;
  }
}
