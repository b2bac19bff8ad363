/**
 * `styx.conf`: `styx server`'s flags in a file, in RabbitMQ's `rabbitmq.conf` format (sysctl-like
 * `key = value` lines, `#` comments), because that is where a RabbitMQ operator looks and what their
 * configuration management already writes. One table (`CONFIG_KEYS`) maps every key to its flag, so
 * a new flag gets its key with one line; the values are checked by the flag's own parser (see
 * `serverArgsWithConfig` in server-command.ts), so a key and its flag accept exactly the same
 * values. Flags on the command line override the file.
 */
import { readFile } from 'node:fs/promises';

/** A config file that cannot be used: names the file, the line and the key. Exit code 2. */
export class ConfigFileError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigFileError';
  }
}

/**
 * A key of styx.conf: the `styx server` flag it sets (without `--`), the form of its value, and
 * what goes before the value on the flag (`disk_free_limit.relative = 1.5` is
 * `--disk-free-limit mem_relative:1.5`), if anything.
 */
export type ConfigKey = readonly [key: string, flag: string, form: string, flagPrefix?: string];

/** Every `styx server` flag's key (a test checks none is missing). Add a row with a new flag. */
export const CONFIG_KEYS: readonly ConfigKey[] = [
  ['data_dir', 'data-dir', 'a directory path'],
  ['listeners.host', 'host', 'an address to listen on for clients, e.g. 127.0.0.1 or 0.0.0.0'],
  ['listeners.port', 'port', 'a port number, 0-65535, or none (no plain listener: TLS only)'],
  ['listeners.tls.port', 'tls-port', 'a port number, 0-65535 (the wss listener, with tls.cert_file)'],
  ['listeners.amqp.port', 'amqp-port', 'a port number, 0-65535 (AMQP 0-9-1; 0: no AMQP listener)'],
  [
    'listeners.amqp.tls.port',
    'amqps-port',
    'a port number, 0-65535 (amqps, with tls.cert_file; 0: no amqps listener)',
  ],
  ['management.host', 'management-host', 'an address for the management API, e.g. 127.0.0.1'],
  ['management.port', 'management-port', 'a port number, 0-65535 (0: no management API)'],
  [
    'management.tls.port',
    'management-tls-port',
    'a port number, 0-65535 (the https management listener, with tls.cert_file)',
  ],
  ['tls.cert_file', 'tls-cert', 'a PEM certificate file path'],
  ['tls.key_file', 'tls-key', 'a PEM private key file path (no passphrase)'],
  ['tls.ca_file', 'tls-ca', 'a PEM CA certificate file path (client certificates are then required)'],
  [
    'management.hostname',
    'management-hostname',
    'a name the management API is reached by (repeat the key for several)',
  ],
  [
    'metrics.auth',
    'metrics-auth',
    'true or false (basic auth of a monitoring or administrator user on /metrics)',
  ],
  [
    'metrics.cache_seconds',
    'metrics-cache-seconds',
    'a whole number of seconds, 0-300 (0: render each scrape)',
  ],
  ['log.level', 'log-level', 'fatal, error, warn, info, debug, trace or silent'],
  ['log.format', 'log-format', 'pretty or json'],
  ['limits.memory_budget_mib', 'memory-budget', 'a whole number of MiB (0: no limit)'],
  // RabbitMQ's two keys of one setting: set one of them.
  ['disk_free_limit.absolute', 'disk-free-limit', 'bytes with an optional unit: 50MB, 2GB, 1GiB, 500000000'],
  [
    'disk_free_limit.relative',
    'disk-free-limit',
    "a multiple of the machine's memory, e.g. 1.5",
    'mem_relative:',
  ],
  ['limits.frame_max', 'frame-max', 'a whole number of bytes, 4096-268435456'],
  ['limits.heartbeat', 'heartbeat', 'a whole number of seconds, 0-3600 (0: off)'],
  ['cluster.listen', 'cluster-listen', 'HOST:PORT'],
  ['cluster.join', 'join', 'HOST:PORT (repeat the key for several members)'],
  ['cluster.discovery.dns', 'discover-dns', 'a DNS name listing the nodes (SRV, or A/AAAA with dns_port)'],
  ['cluster.discovery.dns_port', 'discover-dns-port', 'a port number, 1-65535 (read A/AAAA records)'],
  [
    'cluster.discovery.dns_server',
    'discover-dns-server',
    'a DNS server, IP or IP:PORT (repeat the key for several)',
  ],
  ['cluster.node_name', 'node-name', 'a name of 1 to 255 bytes'],
  ['cluster.secret_file', 'cluster-secret-file', 'a file path'],
];

/** Keys kept for features to come, refused with a word rather than as unknown. */
export const RESERVED_KEYS: Readonly<Record<string, string>> = {
  'tls.verify_peer': 'optional client certificates (tls.ca_file requires them)',
};

/** One `key = value` line of a config file. */
export interface ConfigEntry {
  readonly key: string;
  readonly flag: string;
  readonly form: string;
  readonly value: string;
  /** The value as the flag takes it (`flagPrefix` + value). */
  readonly flagValue: string;
  /** 1-based. */
  readonly line: number;
}

/** A parsed config file: its path (for messages) and its entries in file order. */
export interface ServerConfig {
  readonly file: string;
  readonly entries: readonly ConfigEntry[];
}

/** The row of `key`, or undefined. */
export function configKey(key: string): ConfigKey | undefined {
  return CONFIG_KEYS.find(([k]) => k === key);
}

/**
 * Parse the text of a config file. Throws ConfigFileError on a line that is not `key = value`, an
 * unknown or reserved key, an empty value, or a key given twice (except keys of repeatable flags,
 * listed in `repeatable`).
 */
export function parseServerConfig(text: string, file: string, repeatable: ReadonlySet<string>): ServerConfig {
  const entries: ConfigEntry[] = [];
  /** Per flag: the key and line that first set it (two keys may set one flag). */
  const seen = new Map<string, { readonly key: string; readonly line: number }>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const raw = (lines[i] as string).trim();
    if (raw === '' || raw.startsWith('#')) continue;
    const equals = raw.indexOf('=');
    if (equals < 0) throw new ConfigFileError(`${file}:${line}: expected 'key = value', got '${raw}'`);
    const key = raw.slice(0, equals).trim();
    const value = raw.slice(equals + 1).trim();
    const row = configKey(key);
    if (row === undefined) {
      const reserved = RESERVED_KEYS[key];
      if (reserved !== undefined) {
        throw new ConfigFileError(
          `${file}:${line}: ${key} is reserved for ${reserved}, which Styx does not support yet`,
        );
      }
      throw new ConfigFileError(
        `${file}:${line}: unknown key '${key}' (known keys: ${CONFIG_KEYS.map(([k]) => k).join(', ')})`,
      );
    }
    const [, flag, form, flagPrefix = ''] = row;
    if (value === '') throw new ConfigFileError(`${file}:${line}: ${key} needs a value: ${form}`);
    const earlier = seen.get(flag);
    if (earlier !== undefined && !repeatable.has(flag)) {
      throw new ConfigFileError(
        earlier.key === key
          ? `${file}:${line}: ${key} is set again (first on line ${earlier.line}); set it once`
          : `${file}:${line}: ${key} sets what ${earlier.key} (line ${earlier.line}) sets; set one of them`,
      );
    }
    seen.set(flag, earlier ?? { key, line });
    entries.push({ key, flag, form, value, flagValue: `${flagPrefix}${value}`, line });
  }
  return { file, entries };
}

/** Read and parse the config file at `file` (see parseServerConfig). */
export async function readServerConfig(file: string, repeatable: ReadonlySet<string>): Promise<ServerConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`cannot read the config file ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return parseServerConfig(text, file, repeatable);
}

/** The value the file gives `key` (the last one), or undefined. */
export function configValue(config: ServerConfig | undefined, key: string): string | undefined {
  return config?.entries.findLast((e) => e.key === key)?.value;
}
