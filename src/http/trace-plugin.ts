import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { continued, formatTraceparent, withTrace, type TraceContext } from '../tracing/trace-context';

declare module 'fastify' {
  interface FastifyRequest {
    trace: TraceContext;
  }
}

/**
 * W3C Trace Context: a request's `traceparent` is continued (an invalid one starts a new trace, never a 4xx), and
 * what the handler writes to Kafka carries it. The context is entered after the body is parsed: the parser's
 * stream events would otherwise run the handler outside it. The answer names the request's span.
 */
export const tracePlugin = fp(async (app: FastifyInstance) => {
  app.decorateRequest('trace', null as unknown as TraceContext);
  app.addHook('onRequest', (request, reply, done) => {
    const header = request.headers.traceparent;
    request.trace = continued(Array.isArray(header) ? header[0] : header);
    reply.header('traceparent', formatTraceparent(request.trace));
    done();
  });
  app.addHook('preHandler', (request, _reply, done) => withTrace(request.trace, done));
}, { name: 'hookstream-trace' });
