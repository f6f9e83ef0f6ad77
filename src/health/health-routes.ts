import type { FastifyInstance } from 'fastify';
import { halResource, link } from '../http/hal';
import { halResponse, halSchema } from '../http/hal-schemas';
import { problemResponse } from '../http/route-schema-conventions';
import { quieterLevel } from '../logger';
import { ProblemError } from '../problems/problem-error';

export interface Readiness {
  /** a bootstrap broker accepts connections */
  kafkaReachable(): boolean;
  /** every state view this process reads has caught up */
  viewsCaughtUp(): boolean;
}

const CHECKS = {
  type: 'object',
  properties: { kafka: { enum: ['up', 'down'] }, views: { enum: ['caught-up', 'catching-up'] } },
  additionalProperties: false,
};

const SCHEMAS = {
  live: {
    tags: ['operations'],
    summary: 'The process is up',
    operationId: 'getLiveness',
    response: {
      200: halResponse('Up', halSchema({ properties: { status: { const: 'up' } }, links: { self: 'one' } })),
    },
  },
  ready: readinessSchema('getReadiness', 'Kafka is reachable and every state view has caught up', {
    self: 'one',
  }),
  health: readinessSchema('getHealth', 'The readiness answer, with links to liveness and readiness', {
    self: 'one',
    live: 'one',
    ready: 'one',
  }),
};

function readinessSchema(operationId: string, summary: string, links: Record<string, 'one'>) {
  return {
    tags: ['operations'],
    summary,
    operationId,
    response: {
      200: halResponse('Ready', halSchema({ properties: { status: { const: 'ready' }, checks: CHECKS }, links })),
      503: problemResponse('not-ready, with `checks` saying which part failed, and Retry-After.'),
    },
  };
}

export async function healthRoutes(app: FastifyInstance, options: { readiness: Readiness }): Promise<void> {
  const config = { public: true };
  // Probed every few seconds: a request log line for each would bury the rest. Failures still log (warn and up).
  const logLevel = quieterLevel(app.log.level, 'warn');
  app.get('/health/live', { config, logLevel, schema: SCHEMAS.live }, async () =>
    halResource({ status: 'up' }, { self: link('/health/live') }),
  );
  const ready = (links: Record<string, { href: string }>) => {
    const kafka = options.readiness.kafkaReachable();
    const views = options.readiness.viewsCaughtUp();
    if (!kafka || !views) {
      throw new ProblemError(
        'not-ready',
        kafka ? 'State views are still catching up with Kafka.' : 'Kafka is not reachable.',
        {
          extensions: { checks: { kafka: kafka ? 'up' : 'down', views: views ? 'caught-up' : 'catching-up' } },
          headers: { 'retry-after': '2' },
        },
      );
    }
    return halResource({ status: 'ready', checks: { kafka: 'up', views: 'caught-up' } }, links);
  };
  app.get('/health/ready', { config, logLevel, schema: SCHEMAS.ready }, async () =>
    ready({ self: link('/health/ready') }),
  );
  // The path operators and load balancers try first: the readiness answer, and where the two probes are.
  app.get('/health', { config, logLevel, schema: SCHEMAS.health }, async () =>
    ready({ self: link('/health'), live: link('/health/live'), ready: link('/health/ready') }),
  );
}
