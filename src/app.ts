import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { DEFAULT_HTTP_LIMITS, type ApiKeys, type HttpLimits } from './config';
import { healthRoutes, type Readiness } from './health/health-routes';
import { authPlugin } from './http/auth';
import { answerBeforeBody, bodyLimitPlugin } from './http/body-limit';
import { answerClientError } from './http/client-errors';
import { answerConnect } from './http/connect-method';
import { rawAnswers } from './http/raw-answers';
import { contentNegotiationPlugin } from './http/content-negotiation';
import { docsPage } from './docs/docs-page';
import { openApiDocumentRoute, openApiPlugin } from './docs/openapi-plugin';
import { halPlugin } from './http/hal-plugin';
import { hostRequiredPlugin } from './http/host-required';
import { uuidParamsPlugin } from './http/uuid-ids';
import { methodsPlugin } from './http/methods';
import { metricsPlugin, metricsRoute } from './http/metrics-plugin';
import { closingAnswerPlugin, drainPlugin, type DrainBounds } from './http/closing-answer';
import { problemPlugin, sendProblem } from './http/problem-plugin';
import { MAX_PARAM_LENGTH, routerErrorProblem } from './http/router-errors';
import { requestIdOf, requestIdPlugin } from './http/request-id';
import { OneLinePerRequest, requestLoggerFactory } from './http/request-logger';
import { replySerializer, serializerFactory, validatorFactory } from './http/schema-compilers';
import { selectionPlugin } from './http/selection';
import { tracePlugin } from './http/trace-plugin';
import type { Logger } from './logger';
import { resourceRoutes } from './resources/resource-routes';
import type { ResourceRouteDeps } from './resources/resource-context';
import type { Metrics } from './metrics/metrics';
import { rootRoutes } from './root-routes';
import { PROPAGATION_ONLY, type Tracer } from './tracing/tracer';

export interface AppDeps {
  logger: Logger;
  apiKeys: ApiKeys;
  bodyLimitBytes: number;
  readiness: Readiness;
  /** bounds on slow and idle clients; DEFAULT_HTTP_LIMITS when not given */
  http?: HttpLimits;
  /** the api role's resources; other roles serve health only */
  resources?: ResourceRouteDeps;
  /** where request spans go; W3C propagation only when not given */
  tracer?: Tracer;
  /** the service's registry: GET /metrics, and every response timed */
  metrics?: Metrics;
  /** how long a closing server waits for kept-alive connections (closing-answer.ts); its defaults when not given */
  drain?: DrainBounds;
  /** further route plugins (tasks, subscriptions), each with the conventions applied */
  routes?: { plugin: (app: FastifyInstance) => Promise<void>; collections: string[] }[];
}

/** Logs dropped connections at most once per interval: a flood must not become a flood of log lines. */
function dropReporter(logger: Logger, maxConnections: number): () => void {
  let dropped = 0;
  return () => {
    dropped += 1;
    if (dropped > 1) return;
    setTimeout(() => {
      logger.warn({ dropped, maxConnections }, 'connections dropped: HTTP_MAX_CONNECTIONS reached');
      dropped = 0;
    }, 10000).unref();
  };
}

/** The Fastify instance with every convention applied to every route. It never listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const limits = deps.http ?? DEFAULT_HTTP_LIMITS;
  // What Node answers before Fastify sees the request is logged and timed as the rest is.
  const answers = rawAnswers(deps.logger, deps.metrics);
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: requestIdOf,
    childLoggerFactory: requestLoggerFactory,
    logController: new OneLinePerRequest(),
    bodyLimit: deps.bodyLimitBytes,
    // closingAnswerPlugin answers with a Problem instead.
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    http: {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // Node checks both timeouts only this often (30 s by default), which would stretch a 10 s bound to 40 s.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
      // Node would answer a missing Host with an empty 400 of its own; hostRequiredPlugin answers it with a Problem.
      requireHostHeader: false,
    },
    schemaController: { compilersFactory: { buildValidator: validatorFactory(), buildSerializer: serializerFactory } },
    clientErrorHandler: (err, socket) =>
      answerClientError(err as NodeJS.ErrnoException, socket, answers, (path): string[] | undefined =>
        app.allowedMethods(path),
      ),
    // Errors the router raises before any hook runs (a malformed URL) are Problems too, and, as no onResponse hook
    // runs for them either, logged and timed as the answers Node writes are.
    frameworkErrors: (error, request, reply) => {
      const since = performance.now();
      const problemError = routerErrorProblem(error, request.url.split('?')[0]);
      reply.raw.once('close', () => {
        const { id: reqId, method, url } = request;
        answers.answered({ reqId, method, url, statusCode: reply.raw.statusCode, since });
      });
      sendProblem(request, (reply as FastifyReply).header('x-request-id', request.id), problemError);
    },
  });
  app.setReplySerializer(replySerializer);
  app.server.maxConnections = limits.maxConnections;
  app.server.on('drop', dropReporter(deps.logger, limits.maxConnections));
  // Node answers an Expect it does not know (anything but 100-continue) with an empty 417 unless the server listens.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const detail = `Expect: ${JSON.stringify(req.headers.expect ?? '')} is not supported; only 100-continue is.`;
    answerBeforeBody(req, res, answers, { status: 417, kind: 'expectation-failed', detail });
  });
  await app.register(bodyLimitPlugin, { answers });
  app.server.on('connect', (req: IncomingMessage, socket: Duplex) =>
    answerConnect(req, socket, (path) => app.allowedMethods(path), answers),
  );
  await app.register(requestIdPlugin);
  // Before any route: every route's schema gets the conventions' parts, and is documented.
  await app.register(openApiPlugin);
  await app.register(tracePlugin, { tracer: deps.tracer ?? PROPAGATION_ONLY });
  if (deps.metrics) await app.register(metricsPlugin, { metrics: deps.metrics });
  await app.register(problemPlugin);
  await app.register(closingAnswerPlugin);
  await app.register(hostRequiredPlugin);
  await app.register(methodsPlugin);
  await app.register(contentNegotiationPlugin);
  await app.register(authPlugin, { keys: deps.apiKeys.byKey });
  await app.register(uuidParamsPlugin);
  // Before selection, so it sees the body as the route made it: HAL even when `fields` leaves out _links.
  await app.register(halPlugin);
  await app.register(selectionPlugin);

  // The routes, after every convention's hooks and handlers: a route takes those in force where it is registered.
  await app.register(openApiDocumentRoute);
  await app.register(docsPage);
  if (deps.metrics) await app.register(metricsRoute, { metrics: deps.metrics });

  const collections = [
    ...(deps.resources?.registry.all() ?? []).map((r) => r.decl.collection),
    ...(deps.routes ?? []).flatMap((r) => r.collections),
  ];
  await app.register(rootRoutes, { collections });
  await app.register(healthRoutes, { readiness: deps.readiness });
  if (deps.resources) await app.register(resourceRoutes, deps.resources);
  for (const r of deps.routes ?? []) await app.register(r.plugin);
  // Last: its preClose hook runs after the routes' have ended their waits and streams.
  await app.register(drainPlugin, deps.drain ?? {});
  return app;
}
