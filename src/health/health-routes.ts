import type { FastifyInstance } from 'fastify';
import { halResource, link } from '../http/hal';
import { halResponse, halSchema } from '../http/hal-schemas';
import { problemResponse } from '../http/route-schema-conventions';
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
  ready: {
    tags: ['operations'],
    summary: 'Kafka is reachable and every state view has caught up',
    operationId: 'getReadiness',
    response: {
      200: halResponse(
        'Ready',
        halSchema({
          properties: { status: { const: 'ready' }, checks: CHECKS },
          links: { self: 'one' },
        }),
      ),
      503: problemResponse('not-ready, with `checks` saying which part failed, and Retry-After.'),
    },
  },
};

export async function healthRoutes(app: FastifyInstance, options: { readiness: Readiness }): Promise<void> {
  const config = { public: true };
  app.get('/health/live', { config, schema: SCHEMAS.live }, async () =>
    halResource({ status: 'up' }, { self: link('/health/live') }),
  );
  app.get('/health/ready', { config, schema: SCHEMAS.ready }, async () => {
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
    return halResource(
      { status: 'ready', checks: { kafka: 'up', views: 'caught-up' } },
      { self: link('/health/ready') },
    );
  });
}
