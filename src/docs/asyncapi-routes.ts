import type { FastifyInstance } from 'fastify';
import { selectedDocument } from '../http/selection';

/** GET /asyncapi.json: the topics' AsyncAPI document, public like the problem catalogue. */
export async function asyncApiRoutes(app: FastifyInstance, options: { document: object }): Promise<void> {
  const body = JSON.stringify(options.document);
  app.get(
    '/asyncapi.json',
    {
      config: { public: true },
      schema: {
        tags: ['discovery'],
        summary: 'The AsyncAPI 3.0 document of the Kafka topics',
        operationId: 'getAsyncApiDocument',
        response: {
          200: {
            description:
              'The topics a user reads or writes (task events, task requests, domain events, dead letters), ' +
              "with this instance's topic names",
            content: { 'application/json': { schema: { type: 'object' } } },
          },
        },
      },
    },
    async (request, reply) => reply.type('application/json').send(selectedDocument(request, options.document, body)),
  );
}
