import type { FastifyInstance } from 'fastify';
import { halResource, link, type Links } from './http/hal';
import { halResponse, halSchema } from './http/hal-schemas';
import { PROBLEM_TYPES, problemType, type ProblemKind } from './problems/problem-types';

/** `GET /`, the entry point linking every collection and the API's descriptions, and the problem catalogue. */
export async function rootRoutes(app: FastifyInstance, options: { collections: string[] }): Promise<void> {
  const config = { public: true };
  const relations = ['self', ...options.collections, 'health', 'problems', 'openapi', 'docs'];
  const rootSchema = halSchema({
    description: 'The entry point: every collection, and where the API is described.',
    properties: { name: { type: 'string' }, message: { type: 'string' } },
    links: Object.fromEntries(relations.map((rel) => [rel, 'one' as const])),
  });
  app.get(
    '/',
    {
      config,
      schema: {
        tags: ['discovery'],
        summary: 'The entry point',
        operationId: 'getRoot',
        response: { 200: halResponse('Every collection, health, the problem catalogue and the docs', rootSchema) },
      },
    },
    async () => {
      const links: Links = { self: link('/') };
      for (const c of options.collections) links[c] = link(`/${c}`);
      links.health = link('/health/ready');
      links.problems = link('/docs/problems');
      links.openapi = link('/openapi.json');
      links.docs = link('/docs');
      return halResource({ name: 'hookstream', message: 'Long-running HTTP tasks on Apache Kafka.' }, links);
    },
  );

  const catalogueSchema = halSchema({
    description: 'Every problem type this API answers with (docs/problems.md describes each).',
    properties: {
      count: { type: 'integer', minimum: 0 },
      problems: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            type: { type: 'string' },
            status: { type: 'integer', description: 'the status it is answered with by default' },
            statuses: {
              type: 'array',
              items: { type: 'integer' },
              description: 'every status it is answered with, when there are several (the default first)',
            },
            title: { type: 'string' },
          },
          required: ['type', 'status', 'title'],
          additionalProperties: false,
        },
      },
    },
    links: { self: 'one' },
  });
  app.get(
    '/docs/problems',
    {
      config,
      schema: {
        tags: ['discovery'],
        summary: 'The problem catalogue',
        operationId: 'getProblemCatalogue',
        response: { 200: halResponse('The problem types, with their status and stable title', catalogueSchema) },
      },
    },
    async () => {
      const entries = (Object.keys(PROBLEM_TYPES) as ProblemKind[]).map((kind) => ({
        type: problemType(kind),
        ...PROBLEM_TYPES[kind],
      }));
      return halResource({ count: entries.length, problems: entries }, { self: link('/docs/problems') });
    },
  );
}
