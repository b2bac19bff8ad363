import type { CommandCodec, EntryMeta, StateMachine } from '../replicated-log.ts';

/** A command for the compliance machine: add `add` to the total; `fail` makes `apply` throw. */
export interface CounterCommand {
  readonly add: number;
  readonly fail?: boolean;
}

/** What `apply` returns: where the entry landed and the total after it. */
export interface CounterResult {
  readonly index: number;
  readonly ts: number;
  readonly total: number;
}

/** The replicated state: everything a replay must reproduce exactly. */
export interface CounterState {
  total: number;
  /** Every applied `add`, in log order (failed commands included): shows duplicates and gaps. */
  values: number[];
  lastIndex: number;
  lastTs: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON codec for the compliance machine (test data only; real codecs are binary). */
export const counterCodec: CommandCodec<CounterCommand> = {
  encode: (command) => encoder.encode(JSON.stringify(command)),
  decode: (bytes) => JSON.parse(decoder.decode(bytes)) as CounterCommand,
};

/**
 * The deterministic machine the compliance suite drives. Besides its state it records, for this
 * incarnation only, which indexes it was asked to apply and which snapshots it restored, so tests
 * can check "exactly once per incarnation".
 */
export class CounterMachine implements StateMachine<CounterCommand, CounterResult> {
  state: CounterState = { total: 0, values: [], lastIndex: 0, lastTs: 0 };
  /** Indexes passed to `apply` by this incarnation, in call order. */
  readonly appliedIndexes: number[] = [];
  /** Metas passed to `restore` by this incarnation. */
  readonly restored: EntryMeta[] = [];

  apply(command: CounterCommand, meta: EntryMeta): CounterResult {
    this.appliedIndexes.push(meta.index);
    this.state.values.push(command.add);
    this.state.lastIndex = meta.index;
    this.state.lastTs = meta.ts;
    if (command.fail) throw new Error(`command at ${meta.index} rejected by the machine`);
    this.state.total += command.add;
    return { index: meta.index, ts: meta.ts, total: this.state.total };
  }

  snapshot(): Uint8Array {
    return encoder.encode(JSON.stringify(this.state));
  }

  restore(snapshot: Uint8Array, meta: EntryMeta): void {
    this.restored.push(meta);
    this.state = JSON.parse(decoder.decode(snapshot)) as CounterState;
  }
}
