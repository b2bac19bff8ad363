/** The subset of a pino logger the storage uses (a pino `Logger` fits). */
export interface StorageLogger {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

/** Drops everything: the default when no logger is given. */
export const silentStorageLogger: StorageLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};
