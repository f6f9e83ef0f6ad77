import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { TENANT_A_KEY } from './api-keys';

/** The app with every convention plugin and only the given routes: no Kafka, healthy, tenant-a's key accepted. */
export function bareApp(routes: NonNullable<AppDeps['routes']>): Promise<FastifyInstance> {
  return buildApp({
    logger: createLogger('silent'),
    apiKeys: loadConfig({ API_KEYS: `tenant-a:${TENANT_A_KEY}` }).apiKeys,
    bodyLimitBytes: 1024 * 1024,
    readiness: { kafkaReachable: () => true, viewsCaughtUp: () => true },
    routes,
  });
}
