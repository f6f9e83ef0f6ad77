import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { DEFAULT_HTTP_LIMITS, loadConfig } from '../../src/config';
import { exampleResources, exampleTaskTypes } from '../../src/examples';
import { IdempotencyKeys } from '../../src/idempotency/idempotency-keys';
import { createLogger, type Logger } from '../../src/logger';
import type { Readiness } from '../../src/health/health-routes';
import type { Metrics } from '../../src/metrics/metrics';
import { ResourceRegistry } from '../../src/resources/resource-registry';
import { ResourceStore } from '../../src/resources/resource-store';
import { seedResources } from '../../src/resources/seed';
import { DeliveryHistory } from '../../src/subscriptions/delivery-attempt';
import type { Lookup } from '../../src/subscriptions/callback-url-policy';
import { subscriptionRoutes, taskSubscriber, taskSubscriptionViews } from '../../src/subscriptions/subscription-routes';
import { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import { TASK_EVENT_KINDS } from '../../src/tasks/task-events';
import { TaskRegistry } from '../../src/tasks/task-registry';
import { taskRoutes } from '../../src/tasks/task-routes';
import { taskTypeRoutes } from '../../src/tasks/task-type-routes';
import { TaskStore } from '../../src/tasks/task-store';
import { TENANT_A_KEY, TENANT_B_KEY } from '../support/api-keys';
import { FakeKafka, FakePartitionReader } from './fakes';

export interface InMemoryApi {
  app: FastifyInstance;
  kafka: FakeKafka;
  tasks: TaskStore;
  resources: ResourceStore;
  subscriptions: SubscriptionStore;
  /** what GET /tasks/{id}/events reads the task's partition with */
  reader: FakePartitionReader;
}

export interface InMemoryApiOptions {
  /** CALLBACK_ALLOW_PRIVATE; false by default, as in production */
  allowPrivate?: boolean;
  /** how callback host names resolve; the system's resolver by default */
  lookup?: Lookup;
  /** where the api logs; silent (or TEST_LOG_LEVEL) by default */
  logger?: Logger;
  /** the registry GET /metrics serves; without it there is no /metrics */
  metrics?: Metrics;
  /** what /health answers; always ready by default */
  readiness?: Readiness;
}

/**
 * The api role as src/service.ts wires it (the example domain seeded, tasks, task types, subscriptions,
 * Idempotency-Key, the task event routes), on the real stores over FakeKafka: every HTTP convention can be asked with
 * `inject`, no broker. The event routes read the publisher's log through a FakePartitionReader.
 * Tenants: tenant-a (TENANT_A_KEY) and tenant-b (TENANT_B_KEY).
 */
export async function inMemoryApi(options: InMemoryApiOptions = {}): Promise<InMemoryApi> {
  const kafka = new FakeKafka();
  // TEST_LOG_LEVEL shows the api's log, as for the integration tests (test-service.ts).
  const logger =
    options.logger ?? createLogger(loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' }).logLevel);
  const timeoutMs = 5000;
  const resourceRegistry = new ResourceRegistry(exampleResources);
  const taskRegistry = new TaskRegistry(exampleTaskTypes);
  const idempotency = await IdempotencyKeys.open(kafka, {
    publisher: kafka.publisher,
    topic: kafka.topics.idempotencyKeys,
    timeoutMs,
    logger,
    partitionFor: () => 0,
  });
  const publisher = idempotency.wrap(kafka.publisher);
  const resources = await ResourceStore.open(kafka, {
    publisher,
    resourcesTopic: kafka.topics.resources,
    domainEventsTopic: kafka.topics.domainEvents,
    timeoutMs,
  });
  await seedResources(resourceRegistry, resources);
  const tasks = await TaskStore.open(kafka, { publisher, topics: kafka.topics, timeoutMs, retentionMs: 3600000 });
  const subscriptions = await SubscriptionStore.open(kafka, {
    publisher,
    topic: kafka.topics.subscriptions,
    cursorTopic: kafka.topics.callbackBacklogs,
    timeoutMs,
    retentionMs: 3600000,
  });
  const history = await DeliveryHistory.open(kafka);
  const reader = new FakePartitionReader(kafka.publisher);
  const subscriptionDeps = {
    store: subscriptions,
    history,
    tasks,
    eventKinds: [...TASK_EVENT_KINDS, ...resourceRegistry.eventKinds()],
    allowPrivate: options.allowPrivate ?? false,
    lookup: options.lookup,
    idempotency,
    reader,
    kafkaTimeoutMs: timeoutMs,
  };
  const app = await buildApp({
    logger,
    metrics: options.metrics,
    apiKeys: loadConfig({ API_KEYS: `tenant-a:${TENANT_A_KEY},tenant-b:${TENANT_B_KEY}` }).apiKeys,
    bodyLimitBytes: 64 * 1024,
    // No idle limit: inject has no socket whose timeout a `Prefer: wait` could lift (the integration tests have one).
    http: { ...DEFAULT_HTTP_LIMITS, idleTimeoutMs: 0 },
    readiness: options.readiness ?? { kafkaReachable: () => true, viewsCaughtUp: () => true },
    resources: { registry: resourceRegistry, store: resources, idempotency },
    routes: [
      {
        collections: ['tasks'],
        plugin: (a) =>
          taskRoutes(a, {
            registry: taskRegistry,
            store: tasks,
            subscriber: taskSubscriber(subscriptionDeps),
            idempotency,
            events: { reader, timeoutMs, heartbeatMs: 60000, logger },
            ...taskSubscriptionViews(subscriptionDeps),
          }),
      },
      { collections: ['task-types'], plugin: (a) => taskTypeRoutes(a, { registry: taskRegistry }) },
      { collections: ['subscriptions'], plugin: (a) => subscriptionRoutes(a, subscriptionDeps) },
    ],
  });
  return { app, kafka, tasks, resources, subscriptions, reader };
}

/** The Authorization header of a test tenant. */
export const bearer = (key: string = TENANT_A_KEY) => ({ authorization: `Bearer ${key}` });

export interface Call {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'QUERY';
  /** sent as JSON (application/json unless a content-type header says otherwise) */
  body?: unknown;
  /** sent as is */
  raw?: string;
  /** a list sends the header once per value */
  headers?: Record<string, string | string[]>;
  /** tenant-a's key unless told; null sends no Authorization */
  key?: string | null;
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  text: string;
  /** the parsed body; undefined when empty or not JSON */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary response shapes
}

/** One request through Fastify's inject: every plugin and hook runs, no socket. */
export async function call(app: FastifyInstance, url: string, c: Call = {}): Promise<Answer> {
  const headers: Record<string, string | string[]> = { ...(c.key === null ? {} : bearer(c.key)), ...c.headers };
  let payload = c.raw;
  if (c.body !== undefined) {
    payload = JSON.stringify(c.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = c.method ?? (payload !== undefined ? 'POST' : 'GET');
  const res = await app.inject({ method, url, headers, payload });
  let body: unknown;
  try {
    body = res.body ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text: res.body, body };
}
