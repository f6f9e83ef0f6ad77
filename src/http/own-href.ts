import type { FastifyRequest } from 'fastify';

/** A URL, or undefined when `text` is none. */
function parsed(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/**
 * The path, relative to the API root, that a client's href names when it names something of this service: a
 * relative href (`/orders/1`, as our links are), or an absolute one on one of `bases` (PUBLIC_URL, the origin the
 * request came to). Undefined for anything else: a resource of another host is not ours to change, whatever its path.
 */
export function ownPath(href: string, bases: readonly string[]): string | undefined {
  if (href.startsWith('/')) return href.startsWith('//') ? undefined : href;
  const url = parsed(href);
  if (!url || url.search || url.hash || url.username || url.password) return undefined;
  for (const text of bases) {
    const base = parsed(text);
    if (!base || base.origin !== url.origin) continue;
    const root = base.pathname.replace(/\/+$/, '');
    if (url.pathname.startsWith(`${root}/`)) return url.pathname.slice(root.length);
  }
  return undefined;
}

/** The bases an absolute href of this service may start with, for one request: PUBLIC_URL and the request's origin. */
export function ownBases(request: FastifyRequest, publicUrl?: () => string): string[] {
  const bases = [`${request.protocol}://${request.host}`];
  if (publicUrl) bases.push(publicUrl());
  return bases;
}
