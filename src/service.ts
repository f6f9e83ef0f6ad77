import type { FastifyInstance } from 'fastify';
import { buildApp } from './app';
import type { Config, Role } from './config';
import { connectKafka, type KafkaGateway } from './kafka/kafka-gateway';
import type { StateView } from './kafka/types';
import type { Logger } from './logger';
import { exampleDomain } from './resources/example-domain';
import type { ResourceDeclaration } from './resources/resource-declaration';
import type { ResourceRouteDeps } from './resources/resource-context';
import { ResourceRegistry } from './resources/resource-registry';
import { decodeStoredResource, ResourceStore } from './resources/resource-store';
import { seedResources } from './resources/seed';

export interface RunningService {
  /** the api's address when this process runs the api role */
  url: string | undefined;
  app: FastifyInstance | undefined;
  kafka: KafkaGateway;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  brokers: string[];
  logger: Logger;
  role?: Role;
  resources?: ResourceDeclaration[];
}

const runs = (role: Role, part: Exclude<Role, 'all'>) => role === 'all' || role === part;

/** Starts the roles this process runs, on one Kafka connection; stop() hands back work and disconnects. */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, logger } = options;
  const role = options.role ?? config.role;
  const kafka = await connectKafka({
    brokers: options.brokers, topicPrefix: config.topicPrefix, partitions: config.topicPartitions,
    timeoutMs: config.kafkaTimeoutMs, processName: role, logger,
  });
  const views: StateView<unknown>[] = [];
  let app: FastifyInstance | undefined;
  let url: string | undefined;
  const readiness = { kafkaReachable: () => kafka.health.up, viewsCaughtUp: () => views.every((v) => v.caughtUp) };
  try {
    let resources: ResourceRouteDeps | undefined;
    if (runs(role, 'api')) {
      const registry = new ResourceRegistry(options.resources ?? exampleDomain);
      const resourceView = await kafka.createView(kafka.topics.resources, decodeStoredResource);
      views.push(resourceView);
      const store = new ResourceStore({
        view: resourceView, publisher: kafka.publisher, resourcesTopic: kafka.topics.resources,
        domainEventsTopic: kafka.topics.domainEvents, timeoutMs: config.kafkaTimeoutMs,
      });
      const seeded = await seedResources(registry, store);
      if (seeded > 0) logger.info({ seeded }, 'seeded the example domain');
      resources = { registry, store };
    }
    // Every role serves /health on PORT (the container healthcheck); only the api role serves the API.
    app = await buildApp({ logger, apiKeys: config.apiKeys, bodyLimitBytes: config.bodyLimitBytes, readiness, resources });
    url = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app?.close();
    await kafka.close();
    throw err;
  }
  return {
    url, app, kafka,
    async stop() {
      await app?.close();
      await kafka.close();
    },
  };
}
