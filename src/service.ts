import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import { startCallbackBridge } from '../consumers/callback-bridge/callback-bridge';
import { startTaskRunner } from '../consumers/task-runner/task-runner';
import { buildApp, type AppDeps } from './app';
import { asyncApiDocument } from './docs/asyncapi-document';
import { asyncApiRoutes } from './docs/asyncapi-routes';
import type { Config, Role } from './config';
import { decodeIdempotencyRecord, IdempotencyKeys } from './http/idempotency-keys';
import { connectKafka, type KafkaGateway } from './kafka/kafka-gateway';
import type { Publisher } from './kafka/types';
import type { Logger } from './logger';
import { Metrics } from './metrics/metrics';
import { otlpTracer } from './tracing/otlp-tracer';
import { PROPAGATION_ONLY, type Tracer } from './tracing/tracer';
import { exampleDomain } from './resources/example-domain';
import type { ResourceDeclaration } from './resources/resource-declaration';
import { ResourceRegistry } from './resources/resource-registry';
import { decodeStoredResource, ResourceStore, type StoredResource } from './resources/resource-store';
import { seedResources } from './resources/seed';
import { decodeDeliveryAttempt, DeliveryHistory } from './subscriptions/delivery-attempt';
import { decodeSubscription, type Subscription } from './subscriptions/subscription';
import { newSubscriptionRepresentation, subscriptionRepresentation } from './subscriptions/subscription-representation';
import { subscriptionRoutes, taskSubscriber } from './subscriptions/subscription-routes';
import { SubscriptionStore } from './subscriptions/subscription-store';
import { exampleTaskTypes } from './tasks/example-task-types';
import { TASK_EVENT_KINDS } from './tasks/task-events';
import { TaskRegistry } from './tasks/task-registry';
import { TaskRetention } from './tasks/task-retention';
import { taskRoutes } from './tasks/task-routes';
import { taskTypeRoutes } from './tasks/task-type-routes';
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

interface Parts {
  config: Config;
  logger: Logger;
  kafka: KafkaGateway;
  resourceRegistry: ResourceRegistry;
  taskRegistry: TaskRegistry;
  /** what the api's background work (retention sweeps) needs stopped */
  stopping: (() => void)[];
  /** where links in callback bodies point: PUBLIC_URL, else the api's own address */
  publicUrl: () => string;
  metrics: Metrics;
  tracer: Tracer;
}

async function resourceStore({ kafka, config }: Parts, publisher: Publisher = kafka.publisher): Promise<ResourceStore> {
  return new ResourceStore({
    view: await kafka.view<StoredResource>(kafka.topics.resources, decodeStoredResource), publisher,
    resourcesTopic: kafka.topics.resources, domainEventsTopic: kafka.topics.domainEvents, timeoutMs: config.kafkaTimeoutMs,
  });
}

async function apiRoutes(p: Parts): Promise<Pick<AppDeps, 'resources' | 'routes'>> {
  const { kafka, config, logger } = p;
  const idempotency = new IdempotencyKeys({
    view: await kafka.view(kafka.topics.idempotencyKeys, decodeIdempotencyRecord), publisher: kafka.publisher,
    topic: kafka.topics.idempotencyKeys, partitionFor: (key) => kafka.partitionFor(kafka.topics.idempotencyKeys, key),
    timeoutMs: config.kafkaTimeoutMs, logger, beforeReplay: () => kafka.syncViews(config.kafkaTimeoutMs),
  });
  // The stores' writes inside a keyed request carry that key's answer in their transaction.
  const publisher = idempotency.wrap(kafka.publisher);
  const store = await resourceStore(p, publisher);
  const seeded = await seedResources(p.resourceRegistry, store);
  if (seeded > 0) logger.info({ seeded }, 'seeded the example domain');
  const tasks = new TaskStore({
    view: await kafka.view<TaskRecord>(kafka.topics.tasks, decodeTaskRecord), publisher, topics: kafka.topics,
    timeoutMs: config.kafkaTimeoutMs, retentionMs: config.taskRetentionMs, metrics: p.metrics,
  });
  const subscriptions = new SubscriptionStore({
    view: await kafka.view<Subscription>(kafka.topics.subscriptions, decodeSubscription),
    history: new DeliveryHistory(await kafka.view(kafka.topics.deliveries, decodeDeliveryAttempt)),
    publisher, topic: kafka.topics.subscriptions, timeoutMs: config.kafkaTimeoutMs,
  });
  const retention = new TaskRetention(tasks, logger);
  retention.start();
  idempotency.startSweeping();
  p.stopping.push(() => retention.stop(), () => idempotency.stop());
  const eventKinds = [...TASK_EVENT_KINDS, ...p.resourceRegistry.all().flatMap(({ decl }) => ['created', 'updated', 'deleted'].map((e) => `${decl.name}.${e}`))];
  const subscriptionDeps = {
    store: subscriptions, tasks, eventKinds, allowPrivate: config.callbacks.allowPrivate, idempotency,
  };
  const resources = { registry: p.resourceRegistry, store, idempotency };
  return {
    resources,
    routes: [
      {
        collections: ['tasks'],
        plugin: (a: FastifyInstance) => taskRoutes(a, {
          registry: p.taskRegistry, store: tasks, subscriber: taskSubscriber(subscriptionDeps), idempotency,
          subscriptionOf: (id) => { const s = subscriptions.get(id); return s && subscriptionRepresentation(s, subscriptions.history.of(id)); },
          createdSubscriptionOf: (id) => {
            const s = subscriptions.get(id);
            return s && newSubscriptionRepresentation(s);
          },
          events: {
            reader: kafka.partitionReader, timeoutMs: config.kafkaTimeoutMs,
            heartbeatMs: config.eventsHeartbeatMs, logger,
          },
        }),
      },
      { collections: ['task-types'], plugin: (a: FastifyInstance) => taskTypeRoutes(a, { registry: p.taskRegistry }) },
      { collections: ['subscriptions'], plugin: (a: FastifyInstance) => subscriptionRoutes(a, subscriptionDeps) },
      { collections: [], plugin: (a: FastifyInstance) => asyncApiRoutes(a, { document: asyncApiDocument({
        topics: kafka.topics, partitions: config.topicPartitions, taskTypes: p.taskRegistry.all(),
        resources: p.resourceRegistry.all().map((r) => r.decl),
      }) }) },
    ],
  };
}

async function runner(p: Parts): Promise<void> {
  const { kafka, config, logger } = p;
  const store = await resourceStore(p);
  await startTaskRunner({
    runGroupConsumer: (o) => kafka.runGroupConsumer(o), fencingPublisher: (id) => kafka.fencingPublisher(id),
    transactionalIdPrefix: `${config.topicPrefix}task-runner-p`, view: await kafka.view<TaskRecord>(kafka.topics.tasks, decodeTaskRecord),
    topics: kafka.topics, registry: p.taskRegistry, resources: { list: (c) => store.list(c) }, logger,
    groupId: `${config.topicPrefix}task-runner`, runnerId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    concurrency: config.taskConcurrency, taskTimeoutMs: config.taskTimeoutMs, kafkaTimeoutMs: config.kafkaTimeoutMs,
    metrics: p.metrics, tracer: p.tracer,
  });
}

async function bridge({ kafka, config, logger, publicUrl, metrics, tracer }: Parts): Promise<void> {
  await startCallbackBridge({
    runGroupConsumer: (o) => kafka.runGroupConsumer(o), publisher: kafka.publisher, logger, topics: kafka.topics,
    subscriptions: await kafka.view<Subscription>(kafka.topics.subscriptions, decodeSubscription),
    groupId: `${config.topicPrefix}callback-bridge`, allowPrivate: config.callbacks.allowPrivate, concurrency: config.callbacks.concurrency,
    callbacks: config.callbacks, kafkaTimeoutMs: config.kafkaTimeoutMs, publicUrl, metrics, tracer,
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
  // Until the api listens (a bridge may deliver before), its configured address stands in for the one it gets.
  let listening: string | undefined;
  const parts: Parts = {
    config, logger, kafka,
    resourceRegistry: new ResourceRegistry(options.resources ?? exampleDomain),
    taskRegistry: new TaskRegistry(options.taskTypes ?? exampleTaskTypes),
    stopping: [],
    publicUrl: () => config.publicUrl ?? listening ?? `http://${config.host}:${config.port}`,
    metrics: new Metrics(() => kafka.consumerLag()),
    tracer: config.tracing.url ? otlpTracer({ ...config.tracing, url: config.tracing.url }) : PROPAGATION_ONLY,
  };
  let app: FastifyInstance | undefined;
  try {
    const api = runs(role, 'api') ? await apiRoutes(parts) : {};
    if (runs(role, 'runner')) await runner(parts);
    if (runs(role, 'bridge')) await bridge(parts);
    // Every role serves /health on PORT (the container healthcheck); only the api role serves the API.
    app = await buildApp({
      logger, apiKeys: config.apiKeys, bodyLimitBytes: config.bodyLimitBytes, http: config.http, ...api, metrics: parts.metrics,
      tracer: parts.tracer,
      readiness: { kafkaReachable: () => kafka.health.up, viewsCaughtUp: () => kafka.viewsCaughtUp() },
    });
    const url = await app.listen({ port: config.port, host: config.host });
    listening = url;
    const started = app;
    return {
      url, app: started, kafka,
      async stop() {
        for (const stop of parts.stopping) stop();
        await started.close();
        await kafka.close();
        await parts.tracer.shutdown().catch((err: unknown) => logger.warn({ err }, 'spans not exported at shutdown'));
      },
    };
  } catch (err) {
    for (const stop of parts.stopping) stop();
    await app?.close();
    await kafka.close();
    throw err;
  }
}
