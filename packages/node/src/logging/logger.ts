import type { Logger } from 'pino';
import pino from 'pino';
import pretty from 'pino-pretty';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface LoggerOptions {
  readonly level: LogLevel;
  /** Human-readable output; defaults to true when stdout is a TTY (JSON lines otherwise). */
  readonly pretty?: boolean;
  /** Where JSON lines go; defaults to stdout. */
  readonly destination?: NodeJS.WritableStream;
}

/**
 * The node's root logger. Components take a child logger (`logger.child({ component })`) so every
 * line says where it came from. Pretty printing runs in-process (no worker thread) so a crash never
 * loses the lines that explain it.
 */
export function createLogger(options: LoggerOptions): Logger {
  const usePretty = options.pretty ?? process.stdout.isTTY === true;
  const base = { level: options.level, base: { pid: process.pid } };
  if (usePretty) {
    return pino(base, pretty({ colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid' }));
  }
  return pino(base, options.destination ?? pino.destination({ sync: false }));
}

/** A logger that drops everything: for tests and embedded use. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
