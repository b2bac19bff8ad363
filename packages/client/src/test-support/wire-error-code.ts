// Test support: the reply code of the WireError a call throws, or undefined when it throws none.
import { WireError } from '../wire/wire-error.ts';

export function wireErrorCode(f: () => unknown): number | undefined {
  try {
    f();
  } catch (err) {
    if (err instanceof WireError) return err.code;
    throw err;
  }
  return undefined;
}
