// Numbers, sizes, ages and arbitrary JSON values as short text for tables.

const integer = new Intl.NumberFormat('en', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en', { maximumFractionDigits: 1 });

export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? '–' : integer.format(n);
}

export function rate(perSecond: number): string {
  return `${decimal.format(perSecond)}/s`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : decimal.format(value)} ${units[unit]}`;
}

/** A duration in ms as '250 ms', '30 s', '5 min', '2 h', '3 d'. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${decimal.format(ms / 1000)} s`;
  if (ms < 7_200_000) return `${decimal.format(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${decimal.format(ms / 3_600_000)} h`;
  return `${decimal.format(ms / 86_400_000)} d`;
}

/** A time (ms or s since the epoch, or an ISO string) as the browser's local date and time. */
export function time(value: unknown): string {
  if (typeof value === 'number') {
    // x-death times are AMQP timestamps in seconds; the API's own times are ms.
    const ms = value < 1e11 ? value * 1000 : value;
    return new Date(ms).toLocaleString();
  }
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? value : new Date(parsed).toLocaleString();
  }
  return '–';
}

/** Any JSON value as one line of text (strings as they are). */
export function text(value: unknown): string {
  if (value === null || value === undefined) return '–';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}
