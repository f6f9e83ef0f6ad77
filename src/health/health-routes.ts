import type { FastifyInstance } from 'fastify';
import { halResource, link } from '../http/hal';
import { ProblemError } from '../problems/problem-error';

export interface Readiness {
  /** a bootstrap broker accepts connections */
  kafkaReachable(): boolean;
  /** every state view this process reads has caught up */
  viewsCaughtUp(): boolean;
}

export async function healthRoutes(app: FastifyInstance, options: { readiness: Readiness }): Promise<void> {
  const config = { public: true };
  app.get('/health/live', { config }, async () => halResource({ status: 'up' }, { self: link('/health/live') }));
  app.get('/health/ready', { config }, async () => {
    const kafka = options.readiness.kafkaReachable();
    const views = options.readiness.viewsCaughtUp();
    if (!kafka || !views) {
      throw new ProblemError('not-ready', kafka ? 'State views are still catching up with Kafka.' : 'Kafka is not reachable.', {
        extensions: { checks: { kafka: kafka ? 'up' : 'down', views: views ? 'caught-up' : 'catching-up' } },
        headers: { 'retry-after': '2' },
      });
    }
    return halResource({ status: 'ready', checks: { kafka: 'up', views: 'caught-up' } }, { self: link('/health/ready') });
  });
}
