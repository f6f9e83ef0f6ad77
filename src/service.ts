import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { startTaskRunner } from '../consumers/task-runner/task-runner';
import { buildApp } from './app';
import type { Config, Role } from './config';
import { connectKafka, type KafkaGateway } from './kafka/kafka-gateway';
import type { StateView } from './kafka/types';
import type { Logger } from './logger';
import { exampleDomain } from './resources/example-domain';
import type { ResourceRouteDeps } from './resources/resource-context';
import type { ResourceDeclaration } from './resources/resource-declaration';
import { ResourceRegistry } from './resources/resource-registry';
import { decodeStoredResource, ResourceStore, type StoredResource } from './resources/resource-store';
import { seedResources } from './resources/seed';
import { exampleTaskTypes } from './tasks/example-task-types';
import { TaskRegistry } from './tasks/task-registry';
import { taskRoutes } from './tasks/task-routes';
import { decodeTaskRecord, type TaskRecord } from './tasks/task-snapshot';
import { TaskStore } from './tasks/task-store';
import type { TaskType } from './tasks/task-type';

export interface RunningService {
  /** where this process serves HTTP: the API for the api role, /health for every role */
  url: string;
  app: FastifyInstance;
  kafka: KafkaGateway;
  stop(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  brokers: string[];
  logger: Logger;
  role?: Role;
  resources?: ResourceDeclaration[];
  taskTypes?: TaskType[];
}

const runs = (role: Role, part: Exclude<Role, 'all'>) => role === 'all' || role === part;

/**
 * The composition root (with main.ts): the only src/ module that imports
 * consumers/. Starts the roles this process runs on one Kafka connection.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, logger } = options;
  const role = options.role ?? config.role;
  const kafka = await connectKafka({
    brokers: options.brokers, topicPrefix: config.topicPrefix, partitions: config.topicPartitions,
    timeoutMs: config.kafkaTimeoutMs, processName: role, logger,
  });
  const views: StateView<unknown>[] = [];
  const view = async <T>(topic: string, decode: (v: string) => T): Promise<StateView<T>> => {
    const v = await kafka.createView(topic, decode);
    views.push(v as StateView<unknown>);
    return v;
  };
  let app: FastifyInstance | undefined;
  try {
    const resourceRegistry = new ResourceRegistry(options.resources ?? exampleDomain);
    const taskRegistry = new TaskRegistry(options.taskTypes ?? exampleTaskTypes);
    const needsTasks = runs(role, 'api') || runs(role, 'runner');
    const resourceView = needsTasks ? await view<StoredResource>(kafka.topics.resources, decodeStoredResource) : undefined;
    const taskView = needsTasks ? await view<TaskRecord>(kafka.topics.tasks, decodeTaskRecord) : undefined;
    const store = resourceView && new ResourceStore({
      view: resourceView, publisher: kafka.publisher, resourcesTopic: kafka.topics.resources,
      domainEventsTopic: kafka.topics.domainEvents, timeoutMs: config.kafkaTimeoutMs,
    });

    let resources: ResourceRouteDeps | undefined;
    const routes = [];
    if (runs(role, 'api') && store && taskView) {
      const seeded = await seedResources(resourceRegistry, store);
      if (seeded > 0) logger.info({ seeded }, 'seeded the example domain');
      resources = { registry: resourceRegistry, store };
      const tasks = new TaskStore({ view: taskView, publisher: kafka.publisher, topics: kafka.topics, timeoutMs: config.kafkaTimeoutMs });
      routes.push({ collections: ['tasks'], plugin: (a: FastifyInstance) => taskRoutes(a, { registry: taskRegistry, store: tasks }) });
    }
    if (runs(role, 'runner') && store && taskView) {
      await startTaskRunner({
        runGroupConsumer: (o) => kafka.runGroupConsumer(o), publisher: kafka.publisher, view: taskView, topics: kafka.topics,
        registry: taskRegistry, resources: { list: (c) => store.list(c) }, logger, groupId: `${config.topicPrefix}task-runner`, runnerId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
        concurrency: config.taskConcurrency, taskTimeoutMs: config.taskTimeoutMs, kafkaTimeoutMs: config.kafkaTimeoutMs,
      });
    }
    // Every role serves /health on PORT (the container healthcheck); only the api role serves the API.
    app = await buildApp({
      logger, apiKeys: config.apiKeys, bodyLimitBytes: config.bodyLimitBytes, resources, routes,
      readiness: { kafkaReachable: () => kafka.health.up, viewsCaughtUp: () => views.every((v) => v.caughtUp) },
    });
    const url = await app.listen({ port: config.port, host: config.host });
    const started = app;
    return {
      url, app: started, kafka,
      async stop() {
        await started.close();
        await kafka.close();
      },
    };
  } catch (err) {
    await app?.close();
    await kafka.close();
    throw err;
  }
}
