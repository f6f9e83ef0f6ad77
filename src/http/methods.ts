import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../problems/problem-error';
import { ACCEPT_PATCH } from './content-negotiation';
import { addRequestStep } from './convention-hooks';

declare module 'fastify' {
  interface FastifyInstance {
    /** The methods a path takes (with OPTIONS), sorted; undefined when no route has it. */
    allowedMethods(path: string): string[] | undefined;
  }
}

interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

/** A route's path as a pattern: `:param` is one segment, a `*` segment (the docs page's files) the rest. */
function patternOf(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}/?$`);
}

/**
 * Spec "Method semantics": a known path answers an unsupported method with 405
 * and `Allow`, and OPTIONS with `Allow` and no side effect. Fastify routes by
 * method first, so both arrive in the not-found handler, which consults the
 * paths every route registered. X-HTTP-Method-Override is never read.
 */
export const methodsPlugin = fp(
  async (app: FastifyInstance) => {
    const paths = new Map<string, PathMethods>();

    app.addHook('onRoute', (route) => {
      const entry = paths.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
      for (const m of [route.method].flat()) entry.methods.add(m.toUpperCase());
      paths.set(route.url, entry);
    });

    function allowed(path: string): string[] | undefined {
      const found = new Set<string>();
      for (const { pattern, methods } of paths.values()) {
        if (pattern.test(path)) for (const m of methods) found.add(m);
      }
      if (found.size === 0) return undefined;
      found.add('OPTIONS');
      return [...found].sort();
    }
    // For the server's CONNECT answer, which Fastify never sees (connect-method.ts).
    app.decorate('allowedMethods', allowed);

    // RFC 9112 §3.2.4: the asterisk-form target names the server as a whole, for OPTIONS only (RFC 9110 §9.3.7).
    // The router would take "*" for the root and answer GET * with the root document.
    addRequestStep(app, (request) => {
      if (request.raw.url === '*' && request.method !== 'OPTIONS') {
        throw new ProblemError('bad-request', 'The request target * is only for OPTIONS; name a resource.');
      }
      // An unrouted request's answer (404 or 405) depends on its method and path alone: given here, before the body
      // is read, bad JSON or a QUERY without a Content-Type is no 400 and an unknown media type no 415.
      if (request.is404 && request.method !== 'OPTIONS') throw unrouted(request.url.split('?')[0], request.method);
    });

    function unrouted(path: string, method: string): ProblemError {
      const allow = allowed(path);
      // A method the path takes, routed here anyway: what it names is not there (a docs file that does not exist).
      if (!allow || allow.includes(method)) return new ProblemError('not-found', `No resource at ${path}.`);
      const detail = `${method} is not supported on ${path}; use one of ${allow.join(', ')}.`;
      return new ProblemError('method-not-allowed', detail, { headers: { allow: allow.join(', ') } });
    }

    app.setNotFoundHandler(async (request, reply) => {
      if (request.raw.url === '*' && request.method === 'OPTIONS') {
        const every = new Set(['OPTIONS', ...[...paths.values()].flatMap((p) => [...p.methods])]);
        return reply
          .code(204)
          .header('allow', [...every].sort().join(', '))
          .send();
      }
      const path = request.url.split('?')[0];
      const allow = allowed(path);
      if (request.method !== 'OPTIONS' || !allow) throw unrouted(path, request.method);
      // RFC 5789 §3.1: a resource that takes PATCH says in what.
      if (allow.includes('PATCH')) reply.header('accept-patch', ACCEPT_PATCH);
      return reply.code(204).header('allow', allow.join(', ')).send();
    });
  },
  { name: 'hookstream-methods' },
);
