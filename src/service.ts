import type { FastifyInstance, FastifyListenOptions } from 'fastify';
import { buildApp, type AppDeps } from './app';
import { asyncApiDocument } from './docs/asyncapi-document';
import { asyncApiRoutes } from './docs/asyncapi-routes';
import type { Config, Role } from './config';
import { settlesWithin } from './lib/settles-within';
import { listenFailure } from './startup/listen-errors';
import type { HeldPort } from './startup/starting-server';
import { IdempotencyKeys } from './idempotency/idempotency-keys';
import { connectKafka, type KafkaGateway } from './kafka/kafka-gateway';
import type { ConsumerHandle } from './kafka/types';
import type { GroupMemberRecord } from './kafka/stale-member';
import type { Logger } from './logger';
import { Metrics } from './metrics/metrics';
import { otlpTracer } from './tracing/otlp-tracer';
import { PROPAGATION_ONLY, type Tracer } from './tracing/tracer';
import type { ResourceDeclaration } from './resources/resource-declaration';
import { ResourceRegistry } from './resources/resource-registry';
import { ResourceStore } from './resources/resource-store';
import { seedResources } from './resources/seed';
import { DeliveryHistory } from './subscriptions/delivery-attempt';
import { subscriptionRoutes, taskSubscriber, taskSubscriptionViews } from './subscriptions/subscription-routes';
import { SubscriptionRetention } from './subscriptions/subscription-retention';
import { SubscriptionStore } from './subscriptions/subscription-store';
import { TASK_EVENT_KINDS } from './tasks/task-events';
import { TaskRegistry } from './tasks/task-registry';
import { TaskRetention } from './tasks/task-retention';
import { taskRoutes } from './tasks/task-routes';
import { taskTypeRoutes } from './tasks/task-type-routes';
import { TaskStore } from './tasks/task-store';
import type { TaskType } from './tasks/task-type';

export interface RunningService {
  /** where this process serves HTTP: the API for the api role, /health for every role */
  url: string;
  app: FastifyInstance;
  kafka: KafkaGateway;
  stop(): Promise<void>;
}

/** What every role of a process is wired from: one Kafka connection, the configuration and the registries. */
export interface ServiceKernel {
  config: Config;
  logger: Logger;
  kafka: KafkaGateway;
  resourceRegistry: ResourceRegistry;
  taskRegistry: TaskRegistry;
  /** the api's public base: PUBLIC_URL, else its own address (an absolute href on it names one of ours) */
  publicUrl: () => string;
  metrics: Metrics;
  tracer: Tracer;
}

/**
 * A role of consumers/ (the task runner, the callback bridge). It wires itself from the kernel, and its handle stops
 * what the kernel does not own (a runner's partition writers, the bridge's callback connections).
 */
export interface ConsumerRole {
  readonly role: Exclude<Role, 'all' | 'api'>;
  start(kernel: ServiceKernel): Promise<ConsumerHandle>;
}

export interface ServiceOptions {
  config: Config;
  brokers: string[];
  logger: Logger;
  /** PORT, held while Kafka is waited for (main.ts): the service listens on its socket, or once it is closed */
  heldPort?: HeldPort;
  role?: Role;
  /** the resources and task types this service registers (src/examples/ for the example domain) */
  resources: ResourceDeclaration[];
  taskTypes: TaskType[];
  /** the roles besides the api that this process may run; `role` picks among them */
  consumers: readonly ConsumerRole[];
  /** where the consumer groups' members are kept across runs (main.ts: the embedded broker's folder) */
  memberRecord?: GroupMemberRecord;
}

/** How long a stop waits for the spans still buffered to be exported. */
const TRACE_FLUSH_LIMIT_MS = 3000;

const runs = (role: Role, part: Exclude<Role, 'all'>) => role === 'all' || role === part;

/** The api's routes and what it needs stopped when the process stops (retention sweeps). */
interface ApiRole extends Pick<AppDeps, 'resources' | 'routes'> {
  stop(): void;
}

async function apiRole(k: ServiceKernel): Promise<ApiRole> {
  const { kafka, config, logger } = k;
  const idempotency = await IdempotencyKeys.open(kafka, {
    publisher: kafka.publisher,
    topic: kafka.topics.idempotencyKeys,
    timeoutMs: config.kafkaTimeoutMs,
    logger,
    partitionFor: (key) => kafka.partitionFor(kafka.topics.idempotencyKeys, key),
    beforeReplay: () => kafka.syncViews(config.kafkaTimeoutMs),
  });
  // The stores' writes inside a keyed request carry that key's answer in their transaction.
  const publisher = idempotency.wrap(kafka.publisher);
  const store = await ResourceStore.open(kafka, {
    publisher,
    resourcesTopic: kafka.topics.resources,
    domainEventsTopic: kafka.topics.domainEvents,
    timeoutMs: config.kafkaTimeoutMs,
  });
  const seeded = await seedResources(k.resourceRegistry, store);
  if (seeded > 0) logger.info({ seeded }, 'seeded the example domain');
  const tasks = await TaskStore.open(kafka, {
    publisher,
    topics: kafka.topics,
    timeoutMs: config.kafkaTimeoutMs,
    retentionMs: config.taskRetentionMs,
    metrics: k.metrics,
  });
  const subscriptions = await SubscriptionStore.open(kafka, {
    publisher,
    topic: kafka.topics.subscriptions,
    cursorTopic: kafka.topics.callbackBacklogs,
    timeoutMs: config.kafkaTimeoutMs,
    retentionMs: config.taskRetentionMs,
  });
  const history = await DeliveryHistory.open(kafka, config.kafkaTimeoutMs);
  const subscriptionDeps = {
    store: subscriptions,
    history,
    tasks,
    eventKinds: [...TASK_EVENT_KINDS, ...k.resourceRegistry.eventKinds()],
    allowPrivate: config.callbacks.allowPrivate,
    idempotency,
    reader: kafka.partitionReader,
    kafkaTimeoutMs: config.kafkaTimeoutMs,
  };
  const document = asyncApiDocument({
    topics: kafka.topics,
    partitions: config.topicPartitions,
    taskTypes: k.taskRegistry.all(),
    resources: k.resourceRegistry.all().map((r) => r.decl),
  });
  const events = {
    reader: kafka.partitionReader,
    timeoutMs: config.kafkaTimeoutMs,
    heartbeatMs: config.eventsHeartbeatMs,
    logger,
  };
  // Started last: nothing after them can fail and leave them running against a closed Kafka.
  const retention = new TaskRetention(tasks, logger);
  retention.start();
  const subscriptionRetention = new SubscriptionRetention({
    store: subscriptions,
    history,
    publisher: kafka.publisher,
    deliveriesTopic: kafka.topics.deliveries,
    taskExists: (taskId) => tasks.get(taskId) !== undefined,
    retentionMs: config.taskRetentionMs,
    timeoutMs: config.kafkaTimeoutMs,
    logger,
  });
  subscriptionRetention.start();
  idempotency.startSweeping();
  return {
    resources: { registry: k.resourceRegistry, store, idempotency, publicUrl: k.publicUrl },
    routes: [
      {
        collections: ['tasks'],
        plugin: (a: FastifyInstance) =>
          taskRoutes(a, {
            registry: k.taskRegistry,
            store: tasks,
            subscriber: taskSubscriber(subscriptionDeps),
            idempotency,
            events,
            ...taskSubscriptionViews(subscriptionDeps),
          }),
      },
      { collections: ['task-types'], plugin: (a: FastifyInstance) => taskTypeRoutes(a, { registry: k.taskRegistry }) },
      { collections: ['subscriptions'], plugin: (a: FastifyInstance) => subscriptionRoutes(a, subscriptionDeps) },
      { collections: [], plugin: (a: FastifyInstance) => asyncApiRoutes(a, { document }) },
    ],
    stop() {
      retention.stop();
      subscriptionRetention.stop();
      idempotency.stop();
    },
  };
}

function kernel(options: ServiceOptions, kafka: KafkaGateway, publicUrl: () => string): ServiceKernel {
  const { config, logger } = options;
  return {
    config,
    logger,
    kafka,
    publicUrl,
    resourceRegistry: new ResourceRegistry(options.resources),
    taskRegistry: new TaskRegistry(options.taskTypes),
    metrics: new Metrics(() => kafka.consumerLag()),
    tracer: config.tracing.url ? otlpTracer({ ...config.tracing, url: config.tracing.url }, logger) : PROPAGATION_ONLY,
  };
}

/** Listens on PORT: on the held port's socket when there is one, so the port never refuses a connection between. */
async function listenOnPort(app: FastifyInstance, config: Config, held: HeldPort | undefined): Promise<string> {
  // Ready first, so the socket is taken and listened on in one turn of the event loop: a shutdown in between (it
  // closes the held port) would leave the listen a closed socket.
  await app.ready();
  const handle = held?.handle();
  // Node's listen takes `handle` (Fastify passes its options through); Fastify's own type does not list it.
  const options: FastifyListenOptions & { handle?: object } = { port: config.port, host: config.host };
  if (handle) options.handle = handle;
  // Without a handle (none held, or it was closed) the port is bound anew: a held one is let go first.
  else await held?.close();
  const url = await app
    .listen(options)
    .catch((err: NodeJS.ErrnoException) => Promise.reject(listenFailure(err, config.host, config.port)));
  if (handle) held?.handedOver(app.server);
  return url;
}

/**
 * Starts the roles this process runs on one Kafka connection: the api here, the others as the consumer roles
 * given (src/main.ts gives consumers/'s). Every role serves /health on PORT; only the api role serves the API.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const { config, logger } = options;
  const role = options.role ?? config.role;
  const kafka = await connectKafka({
    brokers: options.brokers,
    topicPrefix: config.topicPrefix,
    partitions: config.topicPartitions,
    timeoutMs: config.kafkaTimeoutMs,
    processName: role,
    logger,
    memberRecord: options.memberRecord,
  });
  // Until the api listens (a bridge may deliver before), its configured address stands in for the one it gets.
  let listening: string | undefined;
  const k = kernel(options, kafka, () => config.publicUrl ?? listening ?? `http://${config.host}:${config.port}`);
  let api: ApiRole | undefined;
  let app: FastifyInstance | undefined;
  const consumers: ConsumerHandle[] = [];
  // Each role's own parts first (it stops its consumer group, then what it wrote with), then the shared connection.
  const stopConsumers = () => Promise.all(consumers.map((c) => c.stop()));
  try {
    if (runs(role, 'api')) {
      void kafka.warmUp();
      api = await apiRole(k);
    }
    for (const consumer of options.consumers) if (runs(role, consumer.role)) consumers.push(await consumer.start(k));
    app = await buildApp({
      logger,
      apiKeys: config.apiKeys,
      bodyLimitBytes: config.bodyLimitBytes,
      http: config.http,
      resources: api?.resources,
      routes: api?.routes,
      metrics: k.metrics,
      tracer: k.tracer,
      readiness: { kafkaReachable: () => kafka.health.up, viewsCaughtUp: () => kafka.viewsCaughtUp() },
    });
    const url = await listenOnPort(app, config, options.heldPort);
    listening = url;
    const started = app;
    return {
      url,
      app: started,
      kafka,
      async stop() {
        api?.stop();
        await started.close();
        await stopConsumers();
        await kafka.close();
        // Bounded: the OTLP exporter retries a collector that refuses for about 8 s, half the stop's own limit.
        const flushed = await settlesWithin(k.tracer.shutdown(), TRACE_FLUSH_LIMIT_MS, (err) =>
          logger.warn({ err }, 'spans not exported at shutdown'),
        );
        if (!flushed)
          logger.warn({ ms: TRACE_FLUSH_LIMIT_MS }, 'spans not exported at shutdown: the collector is slow');
      },
    };
  } catch (err) {
    api?.stop();
    await app?.close();
    await stopConsumers();
    await kafka.close();
    throw err;
  }
}
