import type { FastifyRequest } from 'fastify';
import { ProblemError } from '../problems/problem-error';

/**
 * RFC 9110 §13.1.1: a server must evaluate If-Match on a state-changing request. This service issues no entity tags
 * (README "Decisions"), so only `*` can match, and it does whenever the resource exists. Call it once the resource
 * is found: on a missing one the answer is the 404 it would be without the header (§13.2.1). Any other If-Match
 * names a version we never gave out, so the change must not be made: 412.
 */
export function evaluateIfMatch(request: FastifyRequest): void {
  const header = request.headers['if-match'];
  if (header === undefined || header.trim() === '*') return;
  throw new ProblemError(
    'precondition-failed',
    'If-Match names an entity tag this service never issued (it issues none); only If-Match: * can match.',
  );
}
