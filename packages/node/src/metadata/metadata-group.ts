import type { RaftGroupLog } from '@styx/raft';
import type { MetadataCommand, MetadataMachine, MetadataReply } from './metadata-machine.ts';

/** The metadata group as the cluster layer sees it: its Raft replica and the applied state. */
export interface MetadataGroup {
  readonly log: RaftGroupLog<MetadataCommand, MetadataReply>;
  readonly state: MetadataMachine;
  /**
   * Listen to every applied command (on every node, whoever proposed it), and to snapshots
   * installed from the leader (command and reply undefined: everything may have changed).
   */
  onApplied(listener: MetadataListener): () => void;
}

/** See `MetadataGroup.onApplied`. */
export type MetadataListener = (
  command: MetadataCommand | undefined,
  reply: MetadataReply | undefined,
) => void;
