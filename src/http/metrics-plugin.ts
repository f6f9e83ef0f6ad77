import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { quieterLevel } from '../logger';
import type { Metrics } from '../metrics/metrics';

/** A request no route matched: one label for all of them, so a scan of random URLs cannot grow the series. */
const UNMATCHED = 'unmatched';

/** Times every response by its route pattern (never the raw URL: bounded label values). */
export const metricsPlugin = fp(
  async (app: FastifyInstance, options: { metrics: Metrics }) => {
    const { metrics } = options;
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.is404 ? UNMATCHED : (request.routeOptions.url ?? UNMATCHED);
      metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'hookstream-metrics' },
);

/**
 * GET /metrics: the registry in Prometheus' text format, public like /health so a scraper needs no key. A route
 * like the others, registered after the conventions, so its errors are Problems and other methods are 405.
 */
export async function metricsRoute(app: FastifyInstance, options: { metrics: Metrics }): Promise<void> {
  const { metrics } = options;
  app.get(
    '/metrics',
    {
      config: { public: true },
      // Scraped every few seconds, like the health probes: no request log lines unless something fails.
      logLevel: quieterLevel(app.log.level, 'warn'),
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics of this process',
        operationId: 'getMetrics',
        response: {
          200: {
            description: 'Prometheus text format 0.0.4: request latency by route, tasks, callbacks, consumer lag',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        },
      },
    },
    async (_request, reply) => {
      const body = await metrics.registry.metrics();
      return reply.type(metrics.registry.contentType).send(body);
    },
  );
}
