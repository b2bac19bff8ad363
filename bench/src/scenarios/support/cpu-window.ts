/**
 * Broker CPU per message over a case's measured window: the CPU time of every broker process (all
 * nodes; RabbitMQ's beam.smp with its helpers) read when the window opens and when it closes,
 * divided by the messages the window moved. Setup (declares, filling a queue to drain it) stays
 * outside: a case opens the window only once its measured phase begins.
 *
 * On a shared 2-core machine msgs/s alone hides where time goes (a broker may be fast because it
 * has the cores to itself); µs of CPU per message is what another load would have to share.
 */
import type { CaseContext, Metric } from '../scenario.ts';

/** The metric's key: the first figure of every case in the tables. */
export const CPU_PER_MESSAGE_KEY = 'cpu-per-msg';

export interface CpuWindow {
  /**
   * Closes the window over `messages` messages: the broker CPU per message metric (µs/msg), or
   * undefined when /proc could not be read at either end or nothing moved.
   */
  close(messages: number): Metric | undefined;
}

/** Broker CPU µs per message, as a metric (lower is better). */
export function cpuPerMessageMetric(cpuMs: number, messages: number): Metric | undefined {
  if (!(messages > 0) || !Number.isFinite(cpuMs) || cpuMs < 0) return undefined;
  return {
    key: CPU_PER_MESSAGE_KEY,
    label: 'broker CPU per message',
    unit: 'µs/msg',
    value: (cpuMs * 1000) / messages,
    better: 'lower',
  };
}

/** Opens a window now. */
export function openCpuWindow(ctx: Pick<CaseContext, 'brokerCpuMs'>): CpuWindow {
  const start = ctx.brokerCpuMs();
  return {
    close(messages) {
      const end = ctx.brokerCpuMs();
      if (start === undefined || end === undefined) return undefined;
      return cpuPerMessageMetric(end - start, messages);
    },
  };
}

/** `metrics` with `cpu` (if any) in front: the tables show a case's first metrics first. */
export function withCpuFirst(cpu: Metric | undefined, metrics: readonly Metric[]): Metric[] {
  return cpu === undefined ? [...metrics] : [cpu, ...metrics];
}
