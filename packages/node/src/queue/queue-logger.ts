/** The subset of a pino logger the queue subsystem uses (a child logger per queue). */
export interface QueueLogger {
  child(bindings: Record<string, unknown>): QueueLogger;
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}
