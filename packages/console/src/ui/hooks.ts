// Loading API data into a view: one fetch at a time per view, refreshed on an interval while the
// view is shown, the last good answer kept on screen while the next one loads.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, HttpError } from './api.ts';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: HttpError | Error | undefined;
  /** Fetch again now (after a change the view made). */
  readonly reload: () => void;
}

/** An answer or an error with the path it came from. */
interface Answer<V> {
  readonly path: string;
  readonly value: V;
}

/**
 * GET `path` (nothing while it is undefined), again every `refreshMs` when given. A new `path`
 * drops the old data (it answered another question) in the very render that asks the new one: a
 * page reused for another queue never shows the previous queue's data under the new name.
 */
export function useApi<T>(path: string | undefined, refreshMs?: number): Loaded<T> {
  const [answer, setAnswer] = useState<Answer<T> | undefined>(undefined);
  const [failure, setFailure] = useState<Answer<HttpError | Error> | undefined>(undefined);
  const [tick, setTick] = useState(0);

  useEffect(() => {
    if (path === undefined) return undefined;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async (): Promise<void> => {
      try {
        const value = await api<T>('GET', path);
        if (stopped) return;
        setAnswer({ path, value });
        setFailure(undefined);
      } catch (err) {
        if (stopped) return;
        setFailure({ path, value: err instanceof Error ? err : new Error(String(err)) });
      }
      if (!stopped && refreshMs !== undefined) timer = setTimeout(load, refreshMs);
    };
    void load();
    return () => {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [path, refreshMs, tick]);

  const reload = useCallback(() => setTick((t) => t + 1), []);
  const data = answer !== undefined && answer.path === path ? answer.value : undefined;
  const error = failure !== undefined && failure.path === path ? failure.value : undefined;
  return { data, error, reload };
}

/** A change the view makes (PUT/POST/DELETE): its error and whether it is running. */
export interface Action {
  readonly busy: boolean;
  readonly error: string | undefined;
  readonly done: string | undefined;
  /** Run `work`; `doneText` is shown when it succeeds. Resolves to whether it succeeded. */
  readonly run: (work: () => Promise<unknown>, doneText?: string) => Promise<boolean>;
}

export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const run = useCallback(async (work: () => Promise<unknown>, doneText?: string): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      await work();
      setDone(doneText);
      return true;
    } catch (err) {
      setError(err instanceof HttpError ? `${err.status}: ${err.message}` : (err as Error).message);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, done, run };
}
