/**
 * Returns the C heap's free pages to the system: glibc's `malloc_trim(0)`, called through koffi (a
 * foreign-function interface shipped with prebuilt binaries).
 *
 * Why: the node's native memory (ArrayBuffer backing stores of message bodies and frames, LMDB's
 * write pages, libuv's reads) comes from glibc's main arena, which gives memory back on free() only
 * from its top. After a burst, a few long-lived allocations above the freed ones keep the rest
 * resident: a node drained of 200k x 1 KiB kept 143 MiB of arena, and `malloc_trim(0)` (tried from
 * a debugger) took its anonymous memory from 218 MiB to 89 MiB, below its idle start (118 MiB).
 *
 * Elsewhere (musl, macOS, Windows: no `malloc_trim`, or koffi cannot load) the trimmer is absent
 * and the node simply keeps what its allocator keeps.
 */
import { createRequire } from 'node:module';

/** Trims the C heap; true when memory was given back. */
export type NativeHeapTrim = () => boolean;

/** glibc's `malloc_trim`, or undefined (with why) where there is none. */
export function loadNativeHeapTrim(): { readonly trim: NativeHeapTrim } | { readonly unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `no glibc on ${process.platform}` };
  try {
    // koffi is CommonJS with a native binary: loaded only when the node wants it.
    const koffi = createRequire(import.meta.url)('koffi') as typeof import('koffi');
    const mallocTrim = koffi.load('libc.so.6').func('int malloc_trim(size_t pad)') as (pad: number) => number;
    return { trim: () => mallocTrim(0) === 1 };
  } catch (err) {
    return { unavailable: err instanceof Error ? err.message : String(err) };
  }
}
