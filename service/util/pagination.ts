/**
 * The `pagination` block of every paged list response (spec: page, limit,
 * total_items, total_pages, has_next, has_previous), computed one way for
 * jobs, maintenance events, the queue and ideas.
 */
export interface Pagination {
  page: number;
  limit: number;
  total_items: number;
  total_pages: number;
  has_next: boolean;
  has_previous: boolean;
}

/** The pagination of page `q.page` (1-based, `q.limit` a page) of `total` items. */
export function paginationOf(q: { page: number; limit: number }, total: number): Pagination {
  const totalPages = Math.ceil(total / q.limit);
  return { page: q.page, limit: q.limit, total_items: total, total_pages: totalPages, has_next: q.page < totalPages, has_previous: q.page > 1 };
}
