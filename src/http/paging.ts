import { link, type Links } from './hal';

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

export function pageLinks(path: string, offset: number, limit: number, total: number, extraQuery = ''): Links {
  const at = (o: number) => link(`${path}?${extraQuery}offset=${o}&limit=${limit}`);
  const links: Links = { self: at(offset) };
  if (offset + limit < total) links.next = at(offset + limit);
  if (offset > 0) links.prev = at(Math.max(0, offset - limit));
  return links;
}
