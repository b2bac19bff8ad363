import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import type { PageableList } from './pagination.ts';
import { pageOf, wantsPage } from './pagination.ts';
import { FilterBudgetError, filterInSlices } from './sliced-filter.ts';

interface Item {
  readonly name: string;
  readonly size: number;
}

const items: Item[] = Array.from({ length: 25 }, (_, i) => ({
  name: `q${String(i).padStart(2, '0')}`,
  size: (i * 7) % 10,
}));

const list: PageableList<Item> = {
  name: (item) => item.name,
  sortKeys: { name: (item) => item.name, size: (item) => item.size },
  json: (item) => item.name,
};

function page(query: string): ReturnType<typeof pageOf> {
  return pageOf(items, new URLSearchParams(query), list);
}

async function refusal(query: string): Promise<string> {
  try {
    await page(query);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return (err as ApiError).message;
  }
  throw new Error(`'${query}' was not refused`);
}

describe('pagination', async () => {
  it('pages only when asked (RabbitMQ: `page` given)', () => {
    expect(wantsPage(new URLSearchParams('page=1'))).toBe(true);
    expect(wantsPage(new URLSearchParams('name=q'))).toBe(false);
  });

  it("answers RabbitMQ's page shape, 100 per page by default", async () => {
    await expect(page('page=1')).resolves.toMatchObject({
      filtered_count: 25,
      item_count: 25,
      page: 1,
      page_count: 1,
      page_size: 100,
      total_count: 25,
    });
    await expect(page('page=3&page_size=10')).resolves.toEqual({
      filtered_count: 25,
      item_count: 5,
      items: ['q20', 'q21', 'q22', 'q23', 'q24'],
      page: 3,
      page_count: 3,
      page_size: 10,
      total_count: 25,
    });
  });

  it('filters by name, as text (any case) or as a regular expression, before paging', async () => {
    await expect(page('page=1&name=Q1')).resolves.toMatchObject({ filtered_count: 10, total_count: 25 });
    await expect(page('page=1&name=^q2[0-2]$&use_regex=true')).resolves.toMatchObject({
      items: ['q20', 'q21', 'q22'],
    });
    // Without use_regex the same text is literal: nothing has '^' in its name.
    await expect(page('page=1&name=^q2')).resolves.toMatchObject({
      filtered_count: 0,
      page_count: 0,
      items: [],
    });
  });

  it('sorts by a key, stably (equal keys keep the list order), and reverses', async () => {
    const bySize = (await page('page=1&page_size=5&sort=size')) as { items: string[] };
    expect(bySize.items).toEqual(['q00', 'q10', 'q20', 'q03', 'q13']);
    const reversed = (await page('page=1&page_size=3&sort=name&sort_reverse=true')) as { items: string[] };
    expect(reversed.items).toEqual(['q24', 'q23', 'q22']);
  });

  it('refuses bad parameters with 400 and the reason', async () => {
    expect(await refusal('page=0')).toMatch(/'page' must be an integer/);
    expect(await refusal('page=x')).toMatch(/'page'/);
    expect(await refusal('page=1&page_size=501')).toMatch(/'page_size' must be an integer from 1 to 500/);
    expect(await refusal('page=1&sort=colour')).toBe("cannot sort by 'colour': one of name, size");
    expect(await refusal('page=1&name=(&use_regex=true')).toMatch(/not a valid regular expression/);
    expect(await refusal('page=1&sort_reverse=yes')).toMatch(/'sort_reverse' must be true or false/);
    expect(await refusal(`page=1&name=${'a'.repeat(257)}`)).toMatch(/at most 256/);
    expect(await refusal('page=4&page_size=10')).toBe('page 4 is out of range (3 pages)');
  });
});

/** Busy for `ms` (a name filter's cost, made deterministic). */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // burn
  }
}

/**
 * The longest gap between two ticks of a 1 ms interval while `work` runs: how long the event loop
 * was held at a time.
 */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await new Promise((resolve) => setTimeout(resolve, 5));
    last = performance.now();
    await work();
    return Math.max(longest, performance.now() - last);
  } finally {
    clearInterval(timer);
  }
}

describe('pagination: name filters never hold the event loop', () => {
  it('runs a catastrophic pattern in linear time: (a+)+$ over names of a run of a then !', async () => {
    // A backtracking engine takes 2^22 steps or more per name here (most of a second each).
    const names = Array.from({ length: 20 }, (_, i) => ({ name: `${'a'.repeat(22 + (i % 3))}!`, size: i }));
    names.push({ name: 'aaaa', size: 0 });
    let reply: unknown;
    const stall = await longestStall(async () => {
      reply = await pageOf(names, new URLSearchParams('page=1&name=(a%2B)%2B$&use_regex=true'), list);
    });
    expect(reply).toMatchObject({ items: ['aaaa'] });
    expect(stall).toBeLessThan(250);
  });

  it('filters a long list in slices, yielding to the event loop between them', async () => {
    // 20,000 names costing 0.02 ms each: 400 ms of filtering that must not run in one go.
    const many = Array.from({ length: 20_000 }, (_, i) => ({ name: `q${i}`, size: 0 }));
    const costly: PageableList<Item> = {
      ...list,
      name: (item) => {
        spin(0.02);
        return item.name;
      },
    };
    let reply: unknown;
    const stall = await longestStall(async () => {
      reply = await pageOf(many, new URLSearchParams('page=1&name=q99&use_regex=true'), costly);
    });
    expect(reply).toMatchObject({ filtered_count: 111, total_count: 20_000 });
    // A slice is SLICE_MS (4 ms); the bound is generous for a loaded 2-core machine.
    expect(stall).toBeLessThan(250);
  });

  it('gives the slices of concurrent filters one lane: one slice per turn of the event loop', async () => {
    // A turn counter: a setImmediate that re-arms itself runs once per turn of the loop.
    let turn = 0;
    let counting = true;
    const count = (): void => {
      turn++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const jobsByTurn = new Map<number, Set<number>>();
    const many = Array.from({ length: 1_000 }, (_, i) => i);
    try {
      await Promise.all(
        Array.from({ length: 4 }, (_, job) =>
          filterInSlices(many, () => {
            spin(0.02);
            const jobs = jobsByTurn.get(turn) ?? new Set<number>();
            jobsByTurn.set(turn, jobs.add(job));
            return true;
          }),
        ),
      );
    } finally {
      counting = false;
    }
    expect(jobsByTurn.size).toBeGreaterThan(4);
    for (const jobs of jobsByTurn.values()) expect(jobs.size).toBe(1);
  });

  it('gives up past its budget', async () => {
    const many = Array.from({ length: 1_000 }, (_, i) => i);
    await expect(
      filterInSlices(
        many,
        () => {
          spin(0.1);
          return true;
        },
        { budgetMs: 20 },
      ),
    ).rejects.toBeInstanceOf(FilterBudgetError);
  });
});
