import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { HAL_MEDIA_TYPE } from './hal';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';
import { jsonBodyParser } from './json-body';
import { headerValues } from './raw-headers';

/** What a request body may be sent as; JSON merge patch for PATCH only. */
export const JSON_BODY_TYPES = ['application/json', HAL_MEDIA_TYPE];
export const MERGE_PATCH_MEDIA_TYPE = 'application/merge-patch+json';
const MERGE_PATCH = MERGE_PATCH_MEDIA_TYPE;
/** RFC 5789 Accept-Patch: what a PATCH body may be, on a 415 to a PATCH and on OPTIONS of a path that takes PATCH. */
export const ACCEPT_PATCH = [MERGE_PATCH, ...JSON_BODY_TYPES].join(', ');
/** A client that accepts this and says nothing of HAL JSON gets HAL JSON (acceptsOurs). */
const JSON_MEDIA_TYPE = 'application/json';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** media types this route answers with besides HAL JSON (a task's event stream: text/event-stream) */
    produces?: string[];
    /**
     * The only media types this route's 2xx answers have, for a route that answers no HAL JSON (the OpenAPI
     * document, the metrics, the docs page): Accept is weighed against these alone. Set from the route's schema
     * (route-schema-conventions.ts) unless the route sets it.
     */
    answers?: string[];
  }
}

/** An Accept header's media ranges, lower-cased, each with its q. */
function mediaRanges(accept: string): { range: string; q: number }[] {
  return accept.split(',').map((part) => {
    const [range, ...params] = part
      .trim()
      .toLowerCase()
      .split(';')
      .map((s) => s.trim());
    return { range, q: qValue(params.find((p) => p.startsWith('q='))) };
  });
}

/** RFC 9110 12.4.2: 0 to 1. A q that is no number is ignored (1), as any parameter we do not understand. */
function qValue(param: string | undefined): number {
  const q = param === undefined || param.trim() === 'q=' ? NaN : Number(param.slice(2));
  return Number.isNaN(q) ? 1 : Math.min(Math.max(q, 0), 1);
}

/**
 * How much an Accept header wants a type (RFC 9110 12.5.1): the q of the most specific range that takes it, and that
 * specificity (2 the type by name, 1 its `type/*`, 0 `*\/*`); q 0 when no range takes it.
 */
export function acceptQuality(accept: string, type: string): { q: number; specificity: number } {
  let best = { q: 0, specificity: -1 };
  for (const { range, q } of mediaRanges(accept)) {
    if (!rangeTakes(range, type)) continue;
    const specificity = range === type ? 2 : range === '*/*' ? 0 : 1;
    if (specificity > best.specificity) best = { q, specificity };
  }
  return best;
}

/** Whether a media range (any, `text/` with a star, `text/html`) takes the type. */
function rangeTakes(range: string, type: string): boolean {
  if (range === '*/*' || range === type) return true;
  return range.endsWith('/*') && type.startsWith(range.slice(0, -1));
}

/**
 * Whether a 2xx answer (HAL JSON, or a route's own type) can go to this client. Each type weighs what the most specific
 * range that takes it says (RFC 9110 12.5.1), so `*\/*` does not lift a `q=0` given to HAL JSON by name. A client
 * that names application/json and says nothing of HAL JSON gets HAL JSON: it is JSON.
 */
export function acceptsOurs(accept: string, extra: readonly string[] = []): boolean {
  return halQuality(accept).q > 0 || acceptsAny(accept, extra);
}

const acceptsAny = (accept: string, types: readonly string[]) => types.some((t) => acceptQuality(accept, t).q > 0);

/**
 * How much an Accept header wants HAL JSON: as it weighs HAL JSON, or, when no range takes HAL JSON at all, as it
 * weighs application/json (a JSON client gets HAL JSON). A HAL JSON refused by name stays refused.
 */
export function halQuality(accept: string): { q: number; specificity: number } {
  const hal = acceptQuality(accept, HAL_MEDIA_TYPE);
  return hal.specificity < 0 ? acceptQuality(accept, JSON_MEDIA_TYPE) : hal;
}

/** A request that has a body: one that declares its length above zero, or is sent in chunks. */
function hasBody(headers: { 'content-length'?: string; 'transfer-encoding'?: string }): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}

/**
 * Request bodies: JSON, HAL JSON, and JSON merge patch (PATCH only); anything
 * else is 415. An Accept that allows none of our types is 406.
 */
export const contentNegotiationPlugin = fp(
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser([...JSON_BODY_TYPES, MERGE_PATCH], { parseAs: 'buffer' }, jsonBodyParser(app));

    addRequestStep(app, (request, reply) => {
      const { headers } = request;
      const body = hasBody(headers);
      if (headers['content-type'] !== undefined) {
        // No content, no media type to refuse (RFC 9110 §8.3): fetch(url, { method: 'DELETE', body: '' }) sends
        // text/plain with nothing, and the DELETE is served as one without a body.
        if (!body) delete headers['content-type'];
        // Node keeps the first of several; which one the body is read as must not depend on the order they came in.
        else if ((headerValues(request.raw.rawHeaders, 'content-type')?.length ?? 0) > 1) {
          throw new ProblemError('bad-request', 'The request has more than one Content-Type header.');
        }
      }
      // Bodies are read as sent (RFC 9110 §8.4: 415 for a content coding the server does not take).
      const coding = headers['content-encoding']?.trim().toLowerCase();
      if (coding && coding !== 'identity' && body) {
        throw new ProblemError(
          'unsupported-media-type',
          `Content-Encoding ${coding} is not accepted; send the body as is.`,
        );
      }
      const accept = headers.accept;
      // OPTIONS answers 204 with Allow: no body, nothing to negotiate.
      if (request.method === 'OPTIONS') return;
      // Whether the answer is the resource or a 406 depends on Accept: a shared cache must key on it.
      reply.header('vary', 'Accept');
      // `*/*`, what most clients send (curl, fetch, undici), takes every type: nothing to parse or look up.
      if (!accept || accept === '*/*') return;
      const { answers, produces } = request.routeOptions.config ?? {};
      if (answers ? acceptsAny(accept, answers) : acceptsOurs(accept, produces)) return;
      const types = answers?.join(', ') ?? HAL_MEDIA_TYPE;
      throw new ProblemError(
        'not-acceptable',
        `This resource answers with ${types} (errors with application/problem+json); Accept was ${JSON.stringify(accept)}.`,
      );
    });

    app.addHook('preValidation', (request, _reply, done) => {
      // The method first: every POST with a body passes here, and only a non-PATCH can be refused.
      const header = request.method === 'PATCH' ? undefined : request.headers['content-type'];
      if (header !== undefined && header.split(';')[0].trim().toLowerCase() === MERGE_PATCH) {
        throw new ProblemError('unsupported-media-type', `${MERGE_PATCH} is accepted for PATCH only.`);
      }
      done();
    });
  },
  { name: 'hookstream-content-negotiation' },
);
