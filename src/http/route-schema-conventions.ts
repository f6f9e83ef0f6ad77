import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { problem } from '../problems/problem-detail';
import { PROBLEM_SCHEMA_ID, problemSchema } from '../problems/problem-schema';
import { PROBLEM_TYPES, type ProblemKind } from '../problems/problem-types';
import { HAL_MEDIA_TYPE } from './hal';
import { ref, type Schema } from './hal-schemas';
import { PROBLEM_MEDIA_TYPE } from './problem-plugin';

/** An example of a kind's Problem: its detail is the explanation after the kind, else its title. */
function exampleOf(description: string): Schema | undefined {
  const kind = /^[a-z-]+/.exec(description)?.[0];
  if (kind === undefined || !Object.hasOwn(PROBLEM_TYPES, kind)) return undefined;
  const explanation = /^[a-z-]+: (.+)$/s.exec(description)?.[1];
  const { title } = PROBLEM_TYPES[kind as ProblemKind];
  return problem(kind as ProblemKind, explanation ? explanation[0].toUpperCase() + explanation.slice(1) : `${title}.`);
}

/**
 * A 4xx/5xx answer: a Problem, as every error of this API is. A description that starts with a problem kind
 * (`not-found: …`) gets an example of that kind.
 */
export function problemResponse(description: string, headers?: Record<string, Schema>): Schema {
  const example = exampleOf(description);
  return {
    description,
    ...(headers ? { headers } : {}),
    content: { [PROBLEM_MEDIA_TYPE]: { schema: ref(PROBLEM_SCHEMA_ID), ...(example ? { example } : {}) } },
  };
}

const list = (what: string): Schema => ({
  type: 'array',
  items: { type: 'string' },
  description: `${what} A flat comma list (\`a,b\`); unknown names are ignored. Never applies to Problems.`,
  examples: [['status', '_links']],
});

/**
 * `fields` and `embedded` (alias `embed`) on every route that answers a JSON body, HAL or a document (spec: "Retrieval
 * with field selection"; DESIGN: on every 2xx body).
 */
const SELECTION: Record<string, Schema> = {
  fields: list('The top-level members to keep (`_links` and `_embedded` included), applied after embedding.'),
  embedded: list('The relations to place under `_embedded`; with the parameter empty, none.'),
  embed: list('Alias of `embedded`.'),
};

/** The 2xx media types whose bodies are JSON objects, so `fields` can select their members. */
const SELECTABLE_TYPES = new Set([HAL_MEDIA_TYPE, 'application/json']);

/** Names of the selection parameters, which the document serializes as comma lists (`style: form, explode: false`). */
export const SELECTION_PARAMETERS = Object.keys(SELECTION);

const STANDARD_ERRORS: Record<string, Schema> = {
  406: problemResponse(
    'not-acceptable: the Accept header allows none of application/hal+json, ' +
      "application/problem+json (or the route's other media types).",
  ),
  '4xx': problemResponse('Any other client error, as a Problem (see /docs/problems).'),
  '5xx': problemResponse('internal-error; kafka-unavailable (with Retry-After) when Kafka cannot be reached in time.'),
};

const BODY_ERRORS: Record<string, Schema> = {
  400: problemResponse(
    'validation-failed (errors[] names each offending field with a JSON pointer), ' + 'or malformed-body.',
  ),
  413: problemResponse('payload-too-large.'),
  415: problemResponse(
    'unsupported-media-type: send application/json or application/hal+json ' +
      '(application/merge-patch+json for PATCH).',
  ),
};

const UNAUTHORIZED = problemResponse('unauthorized: no API key, a wrong one, or two Authorization headers.', {
  'WWW-Authenticate': { type: 'string', description: 'Bearer, with error="invalid_token" for a wrong key' },
});

/** The media types of a route's 2xx answers, as its schema declares them. */
function successTypes(response: Record<string, Schema>): string[] {
  return Object.entries(response).flatMap(([status, r]) =>
    status.startsWith('2') && typeof r.content === 'object' && r.content !== null ? Object.keys(r.content) : [],
  );
}

/** Each route's own declarations win over these defaults. */
function withConventions(route: RouteOptions): Schema {
  const schema = { ...(route.schema as Schema) };
  const response = (schema.response ?? {}) as Record<string, Schema>;
  const isPublic = route.config?.public === true;
  if (isPublic) schema.security = [];
  schema.response = {
    ...STANDARD_ERRORS,
    ...(schema.body ? BODY_ERRORS : {}),
    ...(isPublic ? {} : { 401: UNAUTHORIZED }),
    ...response,
  };
  if (successTypes(response).some((type) => SELECTABLE_TYPES.has(type))) {
    const query = (schema.querystring ?? { type: 'object', properties: {} }) as Schema;
    schema.querystring = { ...query, properties: { ...SELECTION, ...(query.properties as Schema) } };
  }
  return schema;
}

/**
 * What the conventions add to every route's schema, so a route declares only what is its own: the selection
 * parameters of HAL answers, the Problems any route may answer, and the API key (or, for public routes, none).
 * The Problem schema is shared (`Problem`), and so one component of the OpenAPI document.
 */
export const routeSchemaConventions = fp(
  async (app: FastifyInstance) => {
    app.addSchema(problemSchema);
    app.addHook('onRoute', (route) => {
      // The docs page's own files are no part of the API. A GET's automatic HEAD twin passes here again: harmless.
      if (!route.schema || (route.schema as Schema).hide === true) return;
      route.schema = withConventions(route);
      // A route whose answers are no HAL JSON (the documents, the metrics) is negotiated on what it does answer.
      const types = successTypes(((route.schema as Schema).response ?? {}) as Record<string, Schema>);
      if (types.length > 0 && !types.includes(HAL_MEDIA_TYPE)) route.config = { answers: types, ...route.config };
    });
  },
  { name: 'hookstream-route-schema-conventions' },
);
