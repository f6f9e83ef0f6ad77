import { link, type Link, type Links } from './hal';

export interface PageQuery {
  offset: number;
  limit: number;
}

export const MAX_PAGE_SIZE = 100;

/** Fastify validates and coerces these; unknown query parameters are ignored. */
export const pageQuerySchema = {
  type: 'object',
  properties: {
    offset: { type: 'integer', minimum: 0, maximum: 1_000_000_000, default: 0, description: 'items to skip' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: 20, description: 'items per page' },
  },
} as const;

const PAGE_LINK = Symbol('hookstream.pageLink');

/**
 * A link to another page of the same list (`next`, `prev`): the selection plugin adds the request's `fields` and
 * `embedded` to these, and to no other link, whatever its relation is called.
 */
export function pageLink(href: string): Link {
  const l = link(href);
  Object.defineProperty(l, PAGE_LINK, { value: true, enumerable: false });
  return l;
}

export function isPageLink(l: unknown): l is Link {
  return typeof l === 'object' && l !== null && Object.hasOwn(l, PAGE_LINK);
}

export function pageLinks(path: string, offset: number, limit: number, total: number, extraQuery = ''): Links {
  const href = (o: number) => `${path}?${extraQuery}offset=${o}&limit=${limit}`;
  const at = (o: number) => pageLink(href(o));
  const links: Links = { self: link(href(offset)) };
  if (offset + limit < total) links.next = at(offset + limit);
  // Past the end, the last page that has items: one step back would be another empty page.
  if (offset > 0) links.prev = at(Math.max(0, Math.min(offset - limit, total - limit)));
  return links;
}
