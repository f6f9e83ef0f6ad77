import { pointerToken } from '../lib/ill-formed-text';
import type { FastifyRequest } from 'fastify';
import { MAX_FIELD_ERRORS, problem, type ProblemDetail } from '../problems/problem-detail';
import { ProblemError } from '../problems/problem-error';

export const MAX_BULK_ELEMENTS = 1000;

/** `{"order": [...]}` is a bulk body for the `order` resource. */
export function isBulkBody(body: unknown, name: string): body is Record<string, unknown[]> {
  return (
    typeof body === 'object' &&
    body !== null &&
    !Array.isArray(body) &&
    Array.isArray((body as Record<string, unknown>)[name])
  );
}

export function bulkElements(body: unknown, name: string): unknown[] {
  if (!isBulkBody(body, name)) {
    const given = typeof body === 'object' && body !== null && !Array.isArray(body) ? Object.keys(body) : [];
    const missing = !given.includes(name);
    // A member under another name (`orders` for `order`) is named too: told only "/order is required", a client
    // would not see which of its members was the mistake.
    const others = given.filter((k) => k !== name);
    throw new ProblemError('validation-failed', `A bulk body is {"${name}": [ ... ]}.`, {
      errors: [
        problem('invalid-field', `/${name} ${missing ? 'is required: an array' : 'must be an array'}`, {
          instance: `/${name}`,
        }),
        ...others.map((k) => unknownMember(k, name)),
      ],
    });
  }
  const elements = body[name];
  const extra = Object.keys(body).filter((k) => k !== name);
  if (elements.length === 0 || elements.length > MAX_BULK_ELEMENTS || extra.length > 0) {
    throw new ProblemError(
      'validation-failed',
      `A bulk body holds only "${name}", with 1 to ${MAX_BULK_ELEMENTS} elements.`,
      {
        errors:
          extra.length > 0
            ? extra.map((k) => unknownMember(k, name))
            : [
                problem('invalid-field', `/${name} must have 1 to ${MAX_BULK_ELEMENTS} elements`, {
                  instance: `/${name}`,
                }),
              ],
      },
    );
  }
  return elements;
}

function unknownMember(key: string, name: string) {
  const pointer = `/${pointerToken(key)}`;
  return problem('invalid-field', `${pointer} is not a known field; a bulk body holds only "${name}"`, {
    instance: pointer,
  });
}

/** Non-atomic processing is opt-in (`?atomic=false`); the spec discourages it. */
export function atomicRequested(request: FastifyRequest): boolean {
  const value = (request.query as Record<string, unknown> | undefined)?.atomic;
  if (value === undefined || value === 'true') return true;
  if (value === 'false') return false;
  throw new ProblemError('validation-failed', 'atomic is true or false.', {
    errors: [
      problem('invalid-field', '/querystring/atomic must be true or false', { instance: '/querystring/atomic' }),
    ],
  });
}

/** One `errors[]` entry per failed element; `instance` names the element as `/<collection>/<index>`. */
export function elementProblem(
  collection: string,
  index: number,
  status: 400 | 404,
  detail: string,
  errors?: ProblemDetail[],
): ProblemDetail {
  const kind = status === 404 ? 'not-found' : 'validation-failed';
  return problem(kind, detail, { instance: `/${collection}/${index}`, status, ...(errors ? { errors } : {}) });
}

/**
 * The failed elements as an answer lists them: every element, but their field errors only up to MAX_FIELD_ERRORS in
 * all, as one body's are. Each element's own list is capped already; a thousand elements with a hundred errors each
 * made a 12 MB answer to a 600 KB request (and an Idempotency-Key record larger than Kafka takes).
 */
export function listedFailures(failures: ProblemDetail[]): ProblemDetail[] {
  let budget = MAX_FIELD_ERRORS;
  return failures.map((failure) => {
    const nested = failure.errors?.length ?? 0;
    if (nested <= budget) {
      budget -= nested;
      return failure;
    }
    budget = 0;
    const { errors: _unlisted, ...element } = failure;
    const detail = `${failure.detail} Its ${nested} field error(s) are not listed: an answer lists ${MAX_FIELD_ERRORS}.`;
    return { ...element, detail };
  });
}

/**
 * An atomic bulk failure is a 400 (DESIGN "Bulk"), whatever its elements' own statuses (a missing resource is a 404
 * in its errors[] entry): the request as a whole was refused and nothing changed. A non-atomic one answers the
 * matching status (the spec's rule 2.2): 404 when every failure is a missing resource. `processed`: the body a 2xx
 * would have had, and how many elements it holds (the detail says none when every element failed).
 */
export function bulkFailure(
  atomic: boolean,
  failures: ProblemDetail[],
  processed?: { body: unknown; count: number },
): ProblemError {
  if (atomic) {
    return new ProblemError('bulk-failed', `${failures.length} element(s) failed; nothing was changed.`, {
      errors: listedFailures(failures),
      status: 400,
    });
  }
  const status = failures.every((f) => f.status === 404) ? 404 : 400;
  const rest = processed?.count ? 'the others were processed (see processed)' : 'none was processed';
  return new ProblemError('bulk-partially-failed', `${failures.length} element(s) failed; ${rest}.`, {
    errors: listedFailures(failures),
    processed: processed?.body,
    status,
  });
}
