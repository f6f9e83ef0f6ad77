import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { addRequestStep } from './convention-hooks';
import { formatTraceparent, parseTraceparent, type TraceContext } from '../tracing/trace-context';
import { PROPAGATION_ONLY, type Span, type Tracer } from '../tracing/tracer';

declare module 'fastify' {
  interface FastifyRequest {
    trace: TraceContext;
  }
}

/**
 * W3C Trace Context: each request is a server span, a child of its `traceparent` (one that is missing or invalid
 * starts a new trace, never a 4xx), and what the handler writes to Kafka names that span: routes hand
 * `request.trace` to the stores that write. The answer's `traceparent` names the request's span.
 */
export const tracePlugin = fp(
  async (app: FastifyInstance, options: { tracer: Tracer }) => {
    const { tracer } = options;
    app.decorateRequest('trace', null as unknown as TraceContext);
    const parentOf = (request: FastifyRequest) => {
      const header = request.headers.traceparent;
      return parseTraceparent(Array.isArray(header) ? header[0] : header);
    };
    if (tracer === PROPAGATION_ONLY) {
      // Its spans are never exported, so only their ids count: every request skips naming its span, keeping it
      // until the answer and ending it (a hook of its own).
      addRequestStep(app, (request, reply) => {
        request.trace = tracer.start('', 'server', parentOf(request)).context;
        reply.header('traceparent', formatTraceparent(request.trace));
      });
      return;
    }
    const spans = new WeakMap<object, Span>();
    addRequestStep(app, (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      const span = tracer.start(`${request.method} ${route}`, 'server', parentOf(request), {
        'http.request.method': request.method,
        'http.route': route,
      });
      spans.set(request, span);
      request.trace = span.context;
      reply.header('traceparent', formatTraceparent(span.context));
    });
    app.addHook('onResponse', (request, reply, done) => {
      spans.get(request)?.end(reply.statusCode >= 500 ? `answered ${reply.statusCode}` : undefined);
      done();
    });
  },
  { name: 'hookstream-trace' },
);
