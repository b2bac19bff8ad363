import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import type { PageableList } from './pagination.ts';
import { pageOf, wantsPage } from './pagination.ts';

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

function refusal(query: string): string {
  try {
    page(query);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return (err as ApiError).message;
  }
  throw new Error(`'${query}' was not refused`);
}

describe('pagination', () => {
  it('pages only when asked (RabbitMQ: `page` given)', () => {
    expect(wantsPage(new URLSearchParams('page=1'))).toBe(true);
    expect(wantsPage(new URLSearchParams('name=q'))).toBe(false);
  });

  it("answers RabbitMQ's page shape, 100 per page by default", () => {
    expect(page('page=1')).toMatchObject({
      filtered_count: 25,
      item_count: 25,
      page: 1,
      page_count: 1,
      page_size: 100,
      total_count: 25,
    });
    expect(page('page=3&page_size=10')).toEqual({
      filtered_count: 25,
      item_count: 5,
      items: ['q20', 'q21', 'q22', 'q23', 'q24'],
      page: 3,
      page_count: 3,
      page_size: 10,
      total_count: 25,
    });
  });

  it('filters by name, as text (any case) or as a regular expression, before paging', () => {
    expect(page('page=1&name=Q1')).toMatchObject({ filtered_count: 10, total_count: 25 });
    expect(page('page=1&name=^q2[0-2]$&use_regex=true')).toMatchObject({ items: ['q20', 'q21', 'q22'] });
    // Without use_regex the same text is literal: nothing has '^' in its name.
    expect(page('page=1&name=^q2')).toMatchObject({ filtered_count: 0, page_count: 0, items: [] });
  });

  it('sorts by a key, stably (equal keys keep the list order), and reverses', () => {
    const bySize = page('page=1&page_size=5&sort=size') as { items: string[] };
    expect(bySize.items).toEqual(['q00', 'q10', 'q20', 'q03', 'q13']);
    const reversed = page('page=1&page_size=3&sort=name&sort_reverse=true') as { items: string[] };
    expect(reversed.items).toEqual(['q24', 'q23', 'q22']);
  });

  it('refuses bad parameters with 400 and the reason', () => {
    expect(refusal('page=0')).toMatch(/'page' must be an integer/);
    expect(refusal('page=x')).toMatch(/'page'/);
    expect(refusal('page=1&page_size=501')).toMatch(/'page_size' must be an integer from 1 to 500/);
    expect(refusal('page=1&sort=colour')).toBe("cannot sort by 'colour': one of name, size");
    expect(refusal('page=1&name=(&use_regex=true')).toMatch(/not a valid regular expression/);
    expect(refusal('page=1&sort_reverse=yes')).toMatch(/'sort_reverse' must be true or false/);
    expect(refusal(`page=1&name=${'a'.repeat(257)}`)).toMatch(/at most 256/);
    expect(refusal('page=4&page_size=10')).toBe('page 4 is out of range (3 pages)');
  });
});
