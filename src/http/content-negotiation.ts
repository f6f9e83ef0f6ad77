import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { HAL_MEDIA_TYPE } from './hal';
import { ProblemError } from '../problems/problem-error';

/** What a request body may be sent as; JSON merge patch for PATCH only. */
export const JSON_BODY_TYPES = ['application/json', HAL_MEDIA_TYPE];
export const MERGE_PATCH_MEDIA_TYPE = 'application/merge-patch+json';
const MERGE_PATCH = MERGE_PATCH_MEDIA_TYPE;
/** What a 2xx answer can be; a client accepting any of these gets HAL JSON. */
const PRODUCED = [HAL_MEDIA_TYPE, 'application/json', 'application/*', '*/*'];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** media types this route answers with besides HAL JSON (a task's event stream: text/event-stream) */
    produces?: string[];
  }
}

/** The media ranges of an Accept header that the client accepts at all (q > 0), lower-cased. */
export function acceptedRanges(accept: string): string[] {
  return accept.split(',').flatMap((part) => {
    const [range, ...params] = part
      .trim()
      .toLowerCase()
      .split(';')
      .map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    return q && Number(q.slice(2)) === 0 ? [] : [range];
  });
}

function acceptsOurs(accept: string, extra: readonly string[]): boolean {
  return acceptedRanges(accept).some((range) => PRODUCED.includes(range) || extra.includes(range));
}

/**
 * Request bodies: JSON, HAL JSON, and JSON merge patch (PATCH only); anything
 * else is 415. An Accept that allows none of our types is 406.
 */
export const contentNegotiationPlugin = fp(
  async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers();
    const parser = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser([...JSON_BODY_TYPES, MERGE_PATCH], { parseAs: 'string' }, parser);

    app.addHook('onRequest', (request, _reply, done) => {
      const accept = request.headers.accept;
      if (accept && !acceptsOurs(accept, request.routeOptions.config?.produces ?? [])) {
        throw new ProblemError(
          'not-acceptable',
          `This API answers with ${HAL_MEDIA_TYPE} (errors with application/problem+json); Accept was ${JSON.stringify(accept)}.`,
        );
      }
      done();
    });

    app.addHook('preValidation', (request, _reply, done) => {
      const type = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
      if (type === MERGE_PATCH && request.method !== 'PATCH') {
        throw new ProblemError('unsupported-media-type', `${MERGE_PATCH} is accepted for PATCH only.`);
      }
      done();
    });
  },
  { name: 'hookstream-content-negotiation' },
);
