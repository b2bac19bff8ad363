// Typed errors of the chaos harness, so main.ts can tell a broken machine (missing tool, not root)
// from a failed command, a cluster that would not form, and a history that fails its checks.

/** Base class: every error the harness raises on purpose. */
export class ChaosError extends Error {
  override readonly name: string = 'ChaosError';
}

/** The machine cannot run the harness (not root, a tool missing, a leftover run still alive). */
export class PreflightError extends ChaosError {
  override readonly name = 'PreflightError';
}

/** A system command (ip, iptables, tc) exited non-zero or could not start. */
export class CommandError extends ChaosError {
  override readonly name = 'CommandError';
  readonly command: string;
  readonly code: number | null;
  readonly stderr: string;
  constructor(command: string, code: number | null, stderr: string) {
    super(`\`${command}\` failed (exit ${code ?? 'none'}): ${stderr.trim() || '(no output)'}`);
    this.command = command;
    this.code = code;
    this.stderr = stderr;
  }
}

/** A node did not start, or the cluster did not form or heal in time. */
export class ClusterError extends ChaosError {
  override readonly name = 'ClusterError';
}

/** The command line was wrong; main prints the usage and exits 2. */
export class UsageError extends ChaosError {
  override readonly name = 'UsageError';
}
