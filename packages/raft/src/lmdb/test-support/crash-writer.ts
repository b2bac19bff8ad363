/**
 * Child process for the crash test: appends to group 'g' of the log store in `argv[2]` as fast as
 * it can, with `IN_FLIGHT` proposals pipelined, and prints each confirmed command's value on its
 * own line. The parent kills it with SIGKILL at an arbitrary moment. Commands are 1, 2, 3, … in
 * continuation of what the replay found, so the survivor's log shows any gap or duplicate.
 */
import { CounterMachine, counterCodec } from '../../compliance/counter-machine.ts';
import { SingleVoterLog } from '../../single-voter-log.ts';
import { openLogStore } from '../log-store.ts';

/** Proposals kept in flight at once (entries). */
const IN_FLIGHT = 32;

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: crash-writer <data dir>');
const log = new SingleVoterLog('g', openLogStore(dir), counterCodec);
const machine = new CounterMachine();
await log.open(machine);
let next = machine.state.values.length + 1;
process.stdout.write(`ready ${next - 1}\n`);

function pump(): void {
  const add = next++;
  log.propose({ add }).then(
    () => {
      process.stdout.write(`${add}\n`);
      pump();
    },
    (error: unknown) => {
      process.stderr.write(`propose failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
}
for (let i = 0; i < IN_FLIGHT; i++) pump();
