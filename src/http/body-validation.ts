import type { FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { fieldErrors, type ProblemDetail } from '../problems/problem-detail';
import { requireObjectBody } from '../problems/validation';

/** Route options of a route that reports its body's validation itself (see bodyErrors). */
export const REPORTS_BODY_ERRORS = { attachValidation: true } as const;

/**
 * What Fastify's validation of the declared body schema found, for a route that reports it itself: after its own
 * 404, in its own words, or together with checks of its own. A body that is no JSON object at all gets the
 * answer it always got; a failure of another part (the query string) is thrown as Fastify would have.
 */
export function bodyErrors(request: FastifyRequest): ProblemDetail[] {
  const failure = request.validationError;
  if (!failure) return [];
  if (failure.validationContext !== 'body') throw failure;
  const errors = failure.validation as FastifySchemaValidationError[];
  if (errors.some((e) => e.instancePath === '' && e.keyword === 'type')) requireObjectBody(request.body);
  return fieldErrors(errors);
}
