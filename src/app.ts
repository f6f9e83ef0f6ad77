import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { ApiKeys } from './config';
import { healthRoutes, type Readiness } from './health/health-routes';
import { authPlugin } from './http/auth';
import { contentNegotiationPlugin } from './http/content-negotiation';
import { halPlugin } from './http/hal-plugin';
import { methodsPlugin } from './http/methods';
import { problem, PROBLEM_MEDIA_TYPE, problemPlugin } from './http/problem';
import { selectionPlugin } from './http/selection';
import type { Logger } from './logger';
import { resourceRoutes } from './resources/resource-routes';
import type { ResourceRouteDeps } from './resources/resource-context';
import { rootRoutes } from './root-routes';

export interface AppDeps {
  logger: Logger;
  apiKeys: ApiKeys;
  bodyLimitBytes: number;
  readiness: Readiness;
  /** the api role's resources; other roles serve health only */
  resources?: ResourceRouteDeps;
  /** further route plugins (tasks, subscriptions), each with the conventions applied */
  routes?: { plugin: (app: FastifyInstance) => Promise<void>; collections: string[] }[];
}

/** The Fastify instance with every convention applied to every route. It never listens. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    genReqId: () => randomUUID(),
    bodyLimit: deps.bodyLimitBytes,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // A request Node cannot even parse never reaches Fastify's hooks: answer it with a Problem on the socket.
    clientErrorHandler: (err, socket) => {
      if (!socket.writable) return;
      const body = JSON.stringify(problem('bad-request', `The HTTP request could not be parsed (${(err as NodeJS.ErrnoException).code ?? 'malformed'}).`, { instance: '/' }));
      socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    },
    // Errors the router raises before any hook runs (a malformed URL) are Problems too.
    frameworkErrors: (error, request, reply) => {
      (reply as FastifyReply).code(400).type(PROBLEM_MEDIA_TYPE).send(problem('bad-request', error.message, {
        instance: request.url.split('?')[0], logref: request.id,
      }));
    },
  });
  await app.register(problemPlugin);
  await app.register(methodsPlugin);
  await app.register(contentNegotiationPlugin);
  await app.register(authPlugin, { keys: deps.apiKeys.byKey });
  await app.register(selectionPlugin);
  await app.register(halPlugin);

  const collections = [...(deps.resources?.registry.all() ?? []).map((r) => r.decl.collection), ...(deps.routes ?? []).flatMap((r) => r.collections)];
  await app.register(rootRoutes, { collections });
  await app.register(healthRoutes, { readiness: deps.readiness });
  if (deps.resources) await app.register(resourceRoutes, deps.resources);
  for (const r of deps.routes ?? []) await app.register(r.plugin);
  return app;
}
