/**
 * The Node (V8) flags a broker node process runs with, given wherever a node is launched: the
 * `styx` launcher (`bin/styx`), the root package's `styx` script, `styx local-cluster` and the
 * bench's brokers. They cannot be set from inside the process: V8 sizes its heap when the isolate
 * starts (`v8.setFlagsFromString` afterwards leaves the young generation as it was).
 *
 * `--max-semi-space-size=16`: a young generation of 2 × 16 MiB. Node 24 sizes it from the machine's
 * memory, 2 × 64 MiB here, and a broker allocates a few short-lived objects per message (frames,
 * decoded commands, promises) and keeps few of them: scavenges cost what survives, not the
 * nursery's size, so a smaller one costs about as many live bytes per scavenge while its memory
 * stays in the CPU's caches. Measured in rotations of `pnpm bench g.a --target styx` (3 nodes,
 * publish with confirms, 60k messages) on a shared 2-core machine, 2026-12-07: broker CPU per
 * message 55.7 µs on average with 16 MiB, 57.5 with 32, 61 with 8 and 65.2 without (4 rounds
 * each), and lower with 32 than without in 3 of 3 earlier pairs; its resident memory is smaller too
 * (up to 96 MiB less young generation). The bench's `STYX_BENCH_NODE_ARGS` can override it (a
 * later V8 flag wins) for an A/B run.
 */
export const SERVER_NODE_FLAGS: readonly string[] = Object.freeze(['--max-semi-space-size=16']);
