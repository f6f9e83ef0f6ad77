import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../metrics/metrics';

/** A request no route matched: one label for all of them, so a scan of random URLs cannot grow the series. */
const UNMATCHED = 'unmatched';

/**
 * Times every response by its route pattern (never the raw URL: bounded label values), and serves the registry at
 * GET /metrics in Prometheus' text format, public like /health so a scraper needs no key.
 */
export const metricsPlugin = fp(async (app: FastifyInstance, options: { metrics: Metrics }) => {
  const { metrics } = options;
  app.addHook('onResponse', async (request, reply) => {
    const route = request.is404 ? UNMATCHED : (request.routeOptions.url ?? UNMATCHED);
    metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { config: { public: true, produces: ['text/plain'] } }, async (_request, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
}, { name: 'hookstream-metrics' });
