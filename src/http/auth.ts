import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { timingSafeEqual } from 'node:crypto';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';
import { headerValues } from './raw-headers';

declare module 'fastify' {
  interface FastifyRequest {
    tenant: string;
  }
  interface FastifyContextConfig {
    /** root, health and docs: no API key needed */
    public?: boolean;
  }
}

/** the API keys as bytes, made once: every request compares against each of them */
type KeyBytes = readonly (readonly [Buffer, string])[];

function lookup(keys: KeyBytes, presented: string): string | undefined {
  const given = Buffer.from(presented);
  for (const [expected, tenant] of keys) {
    if (expected.length === given.length && timingSafeEqual(expected, given)) return tenant;
  }
  return undefined;
}

export function tenantOf(request: FastifyRequest): string {
  return request.tenant;
}

/** `Authorization: Bearer <api key>`; keys map to tenants. */
export const authPlugin = fp(
  async (app: FastifyInstance, options: { keys: ReadonlyMap<string, string> }) => {
    app.decorateRequest('tenant', '');
    const keys: KeyBytes = [...options.keys].map(([key, tenant]) => [Buffer.from(key), tenant] as const);
    addRequestStep(app, (request) => {
      // Unrouted requests only ever get 404, 405 or OPTIONS' Allow, which the public root already tells.
      if (request.routeOptions.config?.public || request.is404) return;
      // Node keeps the first of repeated Authorization headers and drops the rest; which one counts would be a guess.
      if ((headerValues(request.raw.rawHeaders, 'authorization')?.length ?? 0) > 1) {
        throw new ProblemError('unauthorized', 'Send exactly one Authorization header.', {
          headers: { 'www-authenticate': 'Bearer error="invalid_request"' },
        });
      }
      const header = request.headers.authorization ?? '';
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const tenant = m ? lookup(keys, m[1]) : undefined;
      if (!tenant) {
        // RFC 6750 3.1: an error code only for a Bearer token that was sent; none for no header or another scheme.
        throw new ProblemError(
          'unauthorized',
          m ? 'The API key is not valid.' : 'Send an API key as `Authorization: Bearer <key>`.',
          {
            headers: { 'www-authenticate': m ? 'Bearer error="invalid_token"' : 'Bearer' },
          },
        );
      }
      request.tenant = tenant;
    });
  },
  { name: 'hookstream-auth' },
);
