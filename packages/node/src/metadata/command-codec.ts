/**
 * Encoding of metadata commands for logs that persist or send them: JSON, with field tables in
 * the typed form the state keeps (bytes as base64, non-finite numbers tagged). Tables are copied
 * to plain objects first, so a decoded protobuf instance handed in by the node encodes by its
 * members rather than through protobufjs's own toJSON.
 */

import type { CommandCodec } from '@styx/raft';
import { fieldJsonReplacer, fieldJsonReviver, plainTable } from './field-values.ts';
import type { MetadataCommand } from './types.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export const metadataCommandCodec: CommandCodec<MetadataCommand> = {
  encode(command: MetadataCommand): Uint8Array {
    let plain: MetadataCommand = command;
    if ('arguments' in command) {
      // A malformed table is kept as is: apply answers it with an error reply on every replica.
      const args = plainTable(command.arguments);
      if (args !== undefined) plain = { ...command, arguments: args } as MetadataCommand;
    }
    return encoder.encode(JSON.stringify(plain, fieldJsonReplacer));
  },
  /** Throws on bytes that are not JSON: a corrupt log entry, never expected. apply checks the shape. */
  decode(bytes: Uint8Array): MetadataCommand {
    return JSON.parse(decoder.decode(bytes), fieldJsonReviver) as MetadataCommand;
  },
};
