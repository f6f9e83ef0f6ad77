import type { FastifyInstance } from 'fastify';

/** GET /asyncapi.json: the topics' AsyncAPI document, public like the problem catalogue. */
export async function asyncApiRoutes(app: FastifyInstance, options: { document: object }): Promise<void> {
  const body = JSON.stringify(options.document);
  app.get('/asyncapi.json', { config: { public: true } }, async (_request, reply) =>
    reply.type('application/json').send(body));
}
