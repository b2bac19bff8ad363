// Test support: a comparable picture of a decoded wire value, to check that two decoders built the very
// same objects: which message type each object is an instance of, its own keys in order, and their
// values, recursively (bytes by content and by class, Buffer or not; -0 told apart from 0).

/** The picture of `x`; equal pictures mean the same structure, prototypes and values. */
export function wireShape(x: unknown): unknown {
  if (typeof x === 'number') return Object.is(x, -0) ? '-0' : Number.isNaN(x) ? 'NaN' : x;
  if (x === null || typeof x !== 'object') return x;
  if (x instanceof Uint8Array) return { bytes: Buffer.from(x).toString('hex'), buffer: Buffer.isBuffer(x) };
  if (Array.isArray(x)) return { array: x.map(wireShape), frozen: Object.isFrozen(x) };
  const proto = Object.getPrototypeOf(x) as { $type?: { fullName: string } } | null;
  const type = proto === Object.prototype ? 'Object' : (proto?.$type?.fullName ?? 'unknown');
  const record = x as Record<string, unknown>;
  const keys = Object.keys(record);
  return { type, keys, values: keys.map((k) => wireShape(record[k])) };
}
