export type { CounterCommand, CounterResult, CounterState } from './counter-machine.ts';
export { CounterMachine, counterCodec } from './counter-machine.ts';
export type { LogStorageHarness } from './log-storage-compliance.ts';
export { logStorageCompliance } from './log-storage-compliance.ts';
export type { ComplianceDeps, ReplicatedLogHarness } from './replicated-log-compliance.ts';
export { replicatedLogCompliance } from './replicated-log-compliance.ts';
export type { TransportHarness } from './transport-compliance.ts';
export { transportCompliance } from './transport-compliance.ts';
