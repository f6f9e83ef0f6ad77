import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { HAL_MEDIA_TYPE } from './hal';
import { ProblemError } from './problem';

const JSON_TYPES = ['application/json', HAL_MEDIA_TYPE];
const MERGE_PATCH = 'application/merge-patch+json';
/** What a 2xx answer can be; a client accepting any of these gets HAL JSON. */
const PRODUCED = [HAL_MEDIA_TYPE, 'application/json', 'application/*', '*/*'];

function acceptsOurs(accept: string): boolean {
  return accept.split(',').some((part) => {
    const [range, ...params] = part.trim().toLowerCase().split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    return PRODUCED.includes(range);
  });
}

/**
 * Request bodies: JSON, HAL JSON, and JSON merge patch (PATCH only); anything
 * else is 415. An Accept that allows none of our types is 406.
 */
export const contentNegotiationPlugin = fp(async (app: FastifyInstance) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser([...JSON_TYPES, MERGE_PATCH], { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

  app.addHook('onRequest', async (request) => {
    const accept = request.headers.accept;
    if (accept && !acceptsOurs(accept)) {
      throw new ProblemError('not-acceptable', `This API answers with ${HAL_MEDIA_TYPE} (errors with application/problem+json); Accept was ${JSON.stringify(accept)}.`);
    }
  });

  app.addHook('preValidation', async (request) => {
    const type = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
    if (type === MERGE_PATCH && request.method !== 'PATCH') {
      throw new ProblemError('unsupported-media-type', `${MERGE_PATCH} is accepted for PATCH only.`);
    }
  });
}, { name: 'hookstream-content-negotiation' });
