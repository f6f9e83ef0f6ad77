import type { FastifyError } from 'fastify';
import { ProblemError } from '../problems/problem-error';

/**
 * The longest path segment the router matches against a `:param`. No id of this API comes near it (task ids are at
 * most 64 characters, the others UUIDs or short names), so a longer one names nothing.
 */
export const MAX_PARAM_LENGTH = 200;

/** What a detail quotes of a path: enough to recognise it, never a URL of kilobytes. */
function shortened(path: string): string {
  return path.length > 80 ? `${path.slice(0, 80)}…` : path;
}

/**
 * The Problem for an error the router raises before any hook runs. A segment too long for any id is what a short
 * unknown id is, a 404 (Fastify's own answer, 414 URI Too Long, would be wrong for a URL far below the 16 KB we read).
 */
export function routerErrorProblem(error: FastifyError, path: string): ProblemError {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    const detail = `No resource at ${shortened(path)}: no id is longer than ${MAX_PARAM_LENGTH} characters.`;
    return new ProblemError('not-found', detail);
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    return new ProblemError('bad-request', `The path ${shortened(path)} is not a valid URL (a bad %-escape?).`);
  }
  return new ProblemError('bad-request', 'The request could not be routed.');
}
