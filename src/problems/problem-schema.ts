import { PROBLEM_BASE_URI, PROBLEM_TYPES, problemType, type ProblemKind } from './problem-types';

export const PROBLEM_SCHEMA_ID = 'Problem';

/**
 * The JSON Schema of every 4xx/5xx body, from the registry: `type` is one of the catalogue's URIs. Extension
 * members (`checks` of not-ready, `processed` of a partial bulk failure) are allowed, as RFC 9457 allows them.
 */
export const problemSchema = {
  $id: PROBLEM_SCHEMA_ID,
  type: 'object',
  description:
    'RFC 9457 Problem Details. Clients tell problems apart by `type`, never by `title` or `detail`. ' +
    `The types are catalogued at /docs/problems (each is ${PROBLEM_BASE_URI}<kind>).`,
  properties: {
    type: { type: 'string', enum: (Object.keys(PROBLEM_TYPES) as ProblemKind[]).map(problemType) },
    title: { type: 'string', description: 'stable per type' },
    status: { type: 'integer', minimum: 400, maximum: 599, description: 'the HTTP status of the answer' },
    detail: { type: 'string' },
    instance: { type: 'string', description: 'the request path; in errors[], a JSON pointer to the offending field' },
    logref: { type: 'string', description: 'the request id (X-Request-Id) the request was logged under' },
    errors: { type: 'array', items: { $ref: `${PROBLEM_SCHEMA_ID}#` }, description: 'one entry per offence' },
    processed: { description: 'a non-atomic bulk operation: what it did process, as a 2xx would show it' },
  },
  required: ['type', 'title', 'status', 'detail'],
  additionalProperties: true,
};
