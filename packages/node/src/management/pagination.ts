/**
 * RabbitMQ's pagination of management lists: `?page=N` turns a list endpoint's reply from an
 * array into one page of it, with the other parameters optional:
 *
 *   page          1-based page number (required to page at all)
 *   page_size     items per page, 1..MAX_PAGE_SIZE (default 100, as RabbitMQ)
 *   name          keep items whose name contains this text (case-insensitive), or matches it as a
 *                 regular expression with use_regex=true (case-insensitive too; RE2's syntax, run
 *                 by the linear-time engine: metadata/name-pattern.ts)
 *   sort          the field to sort by (the list's sort keys); sort_reverse=true for descending
 *
 * and the reply `{filtered_count, item_count, items, page, page_count, page_size, total_count}`.
 * Filtering and sorting use cheap per-item keys; only the page's items are turned into JSON, so a
 * page of a 10,000-queue list costs 100 queue views, not 10,000. The name filter runs in slices
 * that yield to the event loop (sliced-filter.ts), and a filter that runs past its budget is a 503.
 */
import { NamePattern, NamePatternError } from '../metadata/name-pattern.ts';
import { badRequest, serviceUnavailable } from './api-error.ts';
import { FilterBudgetError, filterInSlices } from './sliced-filter.ts';
import type { Json } from './views.ts';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;
/** Longest `name` filter, characters (its cost per item grows with its length). */
export const MAX_NAME_FILTER_LENGTH = 256;

/** A sortable value: numbers sort numerically, strings by code point, null first. */
export type SortValue = string | number | boolean | null;

/** How to page one kind of list. */
export interface PageableList<T> {
  readonly name: (item: T) => string;
  /** The `sort` fields this list takes and each item's value for them. */
  readonly sortKeys: Readonly<Record<string, (item: T) => SortValue>>;
  readonly json: (item: T) => Json;
}

/** Whether the query asks for a page (RabbitMQ pages only when `page` is given). */
export function wantsPage(query: URLSearchParams): boolean {
  return query.has('page');
}

function positiveInt(query: URLSearchParams, key: string, fallback: number, max: number): number {
  const raw = query.get(key);
  if (raw === null) return fallback;
  if (!/^[0-9]{1,9}$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw badRequest(`'${key}' must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

function flag(query: URLSearchParams, key: string): boolean {
  const raw = query.get(key);
  if (raw === null || raw === 'false') return false;
  if (raw === 'true') return true;
  throw badRequest(`'${key}' must be true or false`);
}

function nameFilter(query: URLSearchParams): ((name: string) => boolean) | undefined {
  const text = query.get('name');
  if (text === null || text === '') return undefined;
  if (text.length > MAX_NAME_FILTER_LENGTH) {
    throw badRequest(`'name' is at most ${MAX_NAME_FILTER_LENGTH} characters`);
  }
  if (flag(query, 'use_regex')) {
    let pattern: NamePattern;
    try {
      pattern = NamePattern.compile(text, true);
    } catch (err) {
      if (err instanceof NamePatternError) {
        throw badRequest(`'name' is not a valid regular expression: ${err.reason}`);
      }
      throw err;
    }
    return (name) => pattern.test(name);
  }
  const lower = text.toLowerCase();
  return (name) => name.toLowerCase().includes(lower);
}

function compare(a: SortValue, b: SortValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The items whose name `keep` keeps, filtered in slices; 503 past the filter's budget. */
async function filtered<T>(
  items: readonly T[],
  keep: (name: string) => boolean,
  list: PageableList<T>,
): Promise<T[]> {
  try {
    return await filterInSlices(items, (item) => keep(list.name(item)));
  } catch (err) {
    if (err instanceof FilterBudgetError) throw serviceUnavailable(err.message);
    throw err;
  }
}

/** One page of `items` (in their given order unless `sort` is asked for), as RabbitMQ shapes it. */
export async function pageOf<T>(
  items: readonly T[],
  query: URLSearchParams,
  list: PageableList<T>,
): Promise<Json> {
  const page = positiveInt(query, 'page', 1, 1e9);
  const pageSize = positiveInt(query, 'page_size', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  const keep = nameFilter(query);
  const reverse = flag(query, 'sort_reverse');
  const sort = query.get('sort');
  let selected = keep === undefined ? [...items] : await filtered(items, keep, list);
  if (sort !== null && sort !== '') {
    const key = list.sortKeys[sort];
    if (key === undefined) {
      throw badRequest(`cannot sort by '${sort}': one of ${Object.keys(list.sortKeys).join(', ')}`);
    }
    // Each key once per item (a count may cost a lookup), then a stable sort on the values.
    const keyed = selected.map((item, index) => ({ item, index, value: key(item) }));
    keyed.sort((a, b) => compare(a.value, b.value) || a.index - b.index);
    selected = keyed.map((k) => k.item);
  }
  if (reverse) selected.reverse();
  const pageCount = Math.ceil(selected.length / pageSize);
  if (page > Math.max(1, pageCount)) throw badRequest(`page ${page} is out of range (${pageCount} pages)`);
  const slice = selected.slice((page - 1) * pageSize, page * pageSize);
  return {
    filtered_count: selected.length,
    item_count: slice.length,
    items: slice.map(list.json),
    page,
    page_count: pageCount,
    page_size: pageSize,
    total_count: items.length,
  };
}
