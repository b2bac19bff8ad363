/**
 * The free disk space limit (RabbitMQ's `disk_free_limit`): below it, on the filesystem of the data
 * directory, the node raises its disk alarm and publishers are blocked cluster-wide. Given, as in
 * RabbitMQ, either as an absolute amount of bytes with an optional information unit (`50MB`, `2GB`,
 * `1GiB`, `500000000`) or relative to the machine's memory (`mem_relative:1.5`, RabbitMQ's
 * `disk_free_limit.relative = 1.5`): the node may need to write that much when it pages memory out.
 *
 * Units follow RabbitMQ 3.13+ (which follows Kubernetes): `k`/`kB`, `M`/`MB`, `G`/`GB`, `T`/`TB`
 * are powers of 1000; `Ki`/`KiB`, `Mi`/`MiB`, `Gi`/`GiB`, `Ti`/`TiB` powers of 1024.
 */

/** RabbitMQ's default `disk_free_limit`: 50 MB. */
export const DEFAULT_DISK_FREE_LIMIT_BYTES = 50_000_000;

/** The limit as configured: bytes, or a multiple of the machine's memory. */
export type DiskFreeLimit =
  | { readonly kind: 'absolute'; readonly bytes: number }
  | { readonly kind: 'mem_relative'; readonly factor: number };

/** A `--disk-free-limit` value that is neither form; `message` says what was expected. */
export class DiskFreeLimitError extends Error {
  readonly code = 'DISK_FREE_LIMIT_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'DiskFreeLimitError';
  }
}

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  k: 1e3,
  K: 1e3,
  kB: 1e3,
  KB: 1e3,
  M: 1e6,
  MB: 1e6,
  G: 1e9,
  GB: 1e9,
  T: 1e12,
  TB: 1e12,
  Ki: 1024,
  KiB: 1024,
  kiB: 1024,
  Mi: 1024 ** 2,
  MiB: 1024 ** 2,
  Gi: 1024 ** 3,
  GiB: 1024 ** 3,
  Ti: 1024 ** 4,
  TiB: 1024 ** 4,
};

/** The largest relative limit accepted: a limit of 100 times the machine's memory is a typo. */
const MAX_MEM_RELATIVE = 100;

const FORMS =
  'bytes with an optional unit (50MB, 2GB, 1GiB, 500000000) or mem_relative:FACTOR (e.g. mem_relative:1.5)';

/** Parse a `--disk-free-limit` value. Throws DiskFreeLimitError naming the value and the forms. */
export function parseDiskFreeLimit(text: string): DiskFreeLimit {
  const value = text.trim();
  const relative = /^mem_relative:(.*)$/.exec(value);
  if (relative !== null) {
    const raw = (relative[1] as string).trim();
    const factor = /^\d+(?:\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(factor > 0 && factor <= MAX_MEM_RELATIVE)) {
      throw new DiskFreeLimitError(
        `'${text}': the factor of mem_relative must be a number above 0 and at most ${MAX_MEM_RELATIVE}`,
      );
    }
    return { kind: 'mem_relative', factor };
  }
  const absolute = /^(\d+)\s*([A-Za-z]*)$/.exec(value);
  const multiplier = absolute === null ? undefined : UNITS[absolute[2] as string];
  if (absolute === null || multiplier === undefined) {
    throw new DiskFreeLimitError(`'${text}' is not a disk free limit: expected ${FORMS}`);
  }
  const bytes = Number(absolute[1]) * multiplier;
  if (!Number.isSafeInteger(bytes)) throw new DiskFreeLimitError(`'${text}' is too large`);
  return { kind: 'absolute', bytes };
}

/** The limit in bytes on a machine with `totalMemoryBytes` of memory. */
export function diskFreeLimitBytes(limit: DiskFreeLimit, totalMemoryBytes: number): number {
  return limit.kind === 'absolute' ? limit.bytes : Math.round(limit.factor * totalMemoryBytes);
}
