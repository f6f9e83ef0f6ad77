import type { FastifyInstance } from 'fastify';
import { halResource, link, type Links } from './http/hal';
import { PROBLEM_TYPES, problemType, type ProblemKind } from './problems/problem-types';

/** `GET /`, the entry point linking every collection, and the problem catalogue. Both public. */
export async function rootRoutes(app: FastifyInstance, options: { collections: string[] }): Promise<void> {
  const config = { public: true };
  app.get('/', { config }, async () => {
    const links: Links = { self: link('/') };
    for (const c of options.collections) links[c] = link(`/${c}`);
    links.health = link('/health/ready');
    links.problems = link('/docs/problems');
    return halResource({ name: 'hookstream', message: 'Long-running HTTP tasks on Apache Kafka.' }, links);
  });
  app.get('/docs/problems', { config }, async () => {
    const entries = (Object.keys(PROBLEM_TYPES) as ProblemKind[]).map((kind) => ({ type: problemType(kind), ...PROBLEM_TYPES[kind] }));
    return halResource({ count: entries.length, problems: entries }, { self: link('/docs/problems') });
  });
}
