import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { startCallbackBridge } from '../consumers/callback-bridge/callback-bridge';
import { startTaskRunner } from '../consumers/task-runner/task-runner';
import { buildApp, type AppDeps } from './app';
import type { Config, Role } from './config';
import { connectKafka, type KafkaGateway } from './kafka/kafka-gateway';
import type { StateView } from './kafka/types';
import type { Logger } from './logger';
import { exampleDomain } from './resources/example-domain';
import type { ResourceDeclaration } from './resources/resource-declaration';
import { ResourceRegistry } from './resources/resource-registry';
import { decodeStoredResource, ResourceStore, type StoredResource } from './resources/resource-store';
import { seedResources } from './resources/seed';
import { decodeDeliveryAttempt, DeliveryHistory } from './subscriptions/delivery-attempt';
import { decodeSubscription, type Subscription } from './subscriptions/subscription';
import { subscriptionRepresentation } from './subscriptions/subscription-representation';
import { subscriptionRoutes, taskSubscriber } from './subscriptions/subscription-routes';
import { SubscriptionStore } from './subscriptions/subscription-store';
import { exampleTaskTypes } from './tasks/example-task-types';
import { TASK_EVENT_KINDS } from './tasks/task-events';
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

/** The views one process reads, each created once however many roles need it. */
class Views {
  readonly all: StateView<unknown>[] = [];
  private readonly byTopic = new Map<string, Promise<StateView<unknown>>>();

  constructor(private readonly kafka: KafkaGateway) {}

  get<T>(topic: string, decode: (v: string) => T): Promise<StateView<T>> {
    let view = this.byTopic.get(topic);
    if (!view) {
      view = this.kafka.createView(topic, decode).then((v) => { this.all.push(v as StateView<unknown>); return v as StateView<unknown>; });
      this.byTopic.set(topic, view);
    }
    return view as Promise<StateView<T>>;
  }
}

interface Parts {
  config: Config;
  logger: Logger;
  kafka: KafkaGateway;
  views: Views;
  resourceRegistry: ResourceRegistry;
  taskRegistry: TaskRegistry;
}

async function resourceStore({ kafka, views, config }: Parts): Promise<ResourceStore> {
  return new ResourceStore({
    view: await views.get<StoredResource>(kafka.topics.resources, decodeStoredResource), publisher: kafka.publisher,
    resourcesTopic: kafka.topics.resources, domainEventsTopic: kafka.topics.domainEvents, timeoutMs: config.kafkaTimeoutMs,
  });
}

async function apiRoutes(p: Parts): Promise<Pick<AppDeps, 'resources' | 'routes'>> {
  const { kafka, views, config, logger } = p;
  const store = await resourceStore(p);
  const seeded = await seedResources(p.resourceRegistry, store);
  if (seeded > 0) logger.info({ seeded }, 'seeded the example domain');
  const tasks = new TaskStore({ view: await views.get<TaskRecord>(kafka.topics.tasks, decodeTaskRecord), publisher: kafka.publisher, topics: kafka.topics, timeoutMs: config.kafkaTimeoutMs });
  const subscriptions = new SubscriptionStore({
    view: await views.get<Subscription>(kafka.topics.subscriptions, decodeSubscription),
    history: new DeliveryHistory(await views.get(kafka.topics.deliveries, decodeDeliveryAttempt)),
    publisher: kafka.publisher, topic: kafka.topics.subscriptions, timeoutMs: config.kafkaTimeoutMs,
  });
  const eventKinds = [...TASK_EVENT_KINDS, ...p.resourceRegistry.all().flatMap(({ decl }) => ['created', 'updated', 'deleted'].map((e) => `${decl.name}.${e}`))];
  const subscriptionDeps = { store: subscriptions, tasks, eventKinds, allowPrivate: config.callbacks.allowPrivate };
  return {
    resources: { registry: p.resourceRegistry, store },
    routes: [
      {
        collections: ['tasks'],
        plugin: (a: FastifyInstance) => taskRoutes(a, {
          registry: p.taskRegistry, store: tasks, subscriber: taskSubscriber(subscriptionDeps),
          subscriptionOf: (id) => { const s = subscriptions.get(id); return s && subscriptionRepresentation(s, subscriptions.history.of(id)); },
        }),
      },
      { collections: ['subscriptions'], plugin: (a: FastifyInstance) => subscriptionRoutes(a, subscriptionDeps) },
    ],
  };
}

async function runner(p: Parts): Promise<void> {
  const { kafka, views, config, logger } = p;
  const store = await resourceStore(p);
  await startTaskRunner({
    runGroupConsumer: (o) => kafka.runGroupConsumer(o), publisher: kafka.publisher, view: await views.get<TaskRecord>(kafka.topics.tasks, decodeTaskRecord),
    topics: kafka.topics, registry: p.taskRegistry, resources: { list: (c) => store.list(c) }, logger,
    groupId: `${config.topicPrefix}task-runner`, runnerId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    concurrency: config.taskConcurrency, taskTimeoutMs: config.taskTimeoutMs, kafkaTimeoutMs: config.kafkaTimeoutMs,
  });
}

async function bridge({ kafka, views, config, logger }: Parts): Promise<void> {
  await startCallbackBridge({
    runGroupConsumer: (o) => kafka.runGroupConsumer(o), publisher: kafka.publisher, logger, topics: kafka.topics,
    subscriptions: await views.get<Subscription>(kafka.topics.subscriptions, decodeSubscription),
    tasks: await views.get<TaskRecord>(kafka.topics.tasks, decodeTaskRecord),
    groupId: `${config.topicPrefix}callback-bridge`, allowPrivate: config.callbacks.allowPrivate, concurrency: config.callbacks.concurrency,
    callbacks: config.callbacks, kafkaTimeoutMs: config.kafkaTimeoutMs,
  });
}

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
  const views = new Views(kafka);
  const parts: Parts = {
    config, logger, kafka, views,
    resourceRegistry: new ResourceRegistry(options.resources ?? exampleDomain),
    taskRegistry: new TaskRegistry(options.taskTypes ?? exampleTaskTypes),
  };
  let app: FastifyInstance | undefined;
  try {
    const api = runs(role, 'api') ? await apiRoutes(parts) : {};
    if (runs(role, 'runner')) await runner(parts);
    if (runs(role, 'bridge')) await bridge(parts);
    // Every role serves /health on PORT (the container healthcheck); only the api role serves the API.
    app = await buildApp({
      logger, apiKeys: config.apiKeys, bodyLimitBytes: config.bodyLimitBytes, ...api,
      readiness: { kafkaReachable: () => kafka.health.up, viewsCaughtUp: () => views.all.every((v) => v.caughtUp) },
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
