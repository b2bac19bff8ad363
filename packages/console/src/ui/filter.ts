// The message filter shared by the inspector and the redrive form (the API's query parameters and
// JSON keys: reason, source_queue, older_than_ms, newer_than_ms, header=name:value), kept per queue
// for the browser tab so a redrive starts from what the inspector showed.

export interface MessageFilterDraft {
  reason: string;
  sourceQueue: string;
  /** Seconds, as typed. */
  olderThan: string;
  newerThan: string;
  /** One `name:value` per line. */
  headers: string;
}

export const NO_FILTER: MessageFilterDraft = {
  reason: '',
  sourceQueue: '',
  olderThan: '',
  newerThan: '',
  headers: '',
};

function seconds(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) && n >= 0 ? Math.round(n * 1000) : undefined;
}

function headerLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The filter as query parameters (header repeated). */
export function filterQuery(draft: MessageFilterDraft): [string, string][] {
  const out: [string, string][] = [];
  if (draft.reason !== '') out.push(['reason', draft.reason]);
  if (draft.sourceQueue !== '') out.push(['source_queue', draft.sourceQueue]);
  const older = seconds(draft.olderThan);
  if (older !== undefined) out.push(['older_than_ms', String(older)]);
  const newer = seconds(draft.newerThan);
  if (newer !== undefined) out.push(['newer_than_ms', String(newer)]);
  for (const line of headerLines(draft.headers)) out.push(['header', line]);
  return out;
}

/** The filter as a JSON object (a redrive's body). */
export function filterJson(draft: MessageFilterDraft): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (draft.reason !== '') out.reason = draft.reason;
  if (draft.sourceQueue !== '') out.source_queue = draft.sourceQueue;
  const older = seconds(draft.olderThan);
  if (older !== undefined) out.older_than_ms = older;
  const newer = seconds(draft.newerThan);
  if (newer !== undefined) out.newer_than_ms = newer;
  const headers = headerLines(draft.headers).map((line) => {
    const colon = line.indexOf(':');
    return colon < 0
      ? { name: line, value: '' }
      : { name: line.slice(0, colon), value: line.slice(colon + 1) };
  });
  if (headers.length > 0) out.headers = headers;
  return out;
}

const key = (vhost: string, queue: string): string => `styx-filter\u0000${vhost}\u0000${queue}`;

export function rememberFilter(vhost: string, queue: string, draft: MessageFilterDraft): void {
  sessionStorage.setItem(key(vhost, queue), JSON.stringify(draft));
}

export function recalledFilter(vhost: string, queue: string): MessageFilterDraft {
  const saved = sessionStorage.getItem(key(vhost, queue));
  if (saved === null) return NO_FILTER;
  try {
    return { ...NO_FILTER, ...(JSON.parse(saved) as Partial<MessageFilterDraft>) };
  } catch {
    return NO_FILTER;
  }
}
