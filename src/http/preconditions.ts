import type { FastifyRequest } from 'fastify';
import { ProblemError } from '../problems/problem-error';

/**
 * RFC 9110 §13.1.1-2: a server must evaluate If-Match, and If-None-Match, on a state-changing request. This service
 * issues no entity tags (README "Decisions"), so of each only `*` can match, and it does whenever the resource
 * exists. Call it once the resource is found: on a missing one the answer is the 404 it would be without the
 * headers (§13.2.1). Any other If-Match names a version we never gave out, so the change must not be made: 412.
 * If-None-Match: `*` asks for the change only where nothing exists (a create-only write), so on an existing
 * resource it is 412 too; a list of tags matches none of ours and the request goes on.
 */
export function evaluatePreconditions(request: FastifyRequest): void {
  const ifMatch = request.headers['if-match'];
  if (ifMatch !== undefined && ifMatch.trim() !== '*') {
    throw new ProblemError(
      'precondition-failed',
      'If-Match names an entity tag this service never issued (it issues none); only If-Match: * can match.',
    );
  }
  const ifNoneMatch = request.headers['if-none-match'];
  if (ifNoneMatch !== undefined && ifNoneMatch.trim() === '*') {
    throw new ProblemError(
      'precondition-failed',
      'If-None-Match: * asks for no current resource, and this one exists.',
    );
  }
}
