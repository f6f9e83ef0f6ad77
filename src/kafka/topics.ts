import type { Admin, ITopicConfig } from 'kafkajs';
import { KafkaUnavailableError } from './types';

/** Every topic the service owns, under one prefix. */
export interface Topics {
  /** compacted: declared resources, key = `<collection>/<id>` */
  resources: string;
  /** compacted: task snapshots, key = task id */
  tasks: string;
  /** compacted: subscriptions, key = subscription UUID */
  subscriptions: string;
  /** task requests from the api or any Kafka client, key = task id */
  taskRequests: string;
  /** every task's events, key = task id (one shared topic; see README) */
  taskEvents: string;
  /** resource events such as order.created, key = `<collection>/<id>` */
  domainEvents: string;
  /** callback attempts, key = `<subscription>/<webhook-id>/<run>/<attempt>`; tombstoned after TASK_RETENTION_MS */
  deliveries: string;
  /** callbacks that exhausted their attempts, key = subscription UUID */
  callbackDeadLetters: string;
  /** compacted: where each callback lane backlog stands, key = `<subscription>/<topic>/<partition>` */
  callbackBacklogs: string;
  /**
   * callbacks of `once` subscriptions to event kinds, handed to one bridge to decide between, key = subscription UUID
   * (consumers/callback-bridge/once-callbacks.ts)
   */
  onceCallbacks: string;
  /** compacted: Idempotency-Key claims and answers, key = `<tenant>/<key>` (claims `!claim/<tenant>/<key>`) */
  idempotencyKeys: string;
}

export function topicNames(prefix: string): Topics {
  return {
    resources: `${prefix}resources`,
    tasks: `${prefix}tasks`,
    subscriptions: `${prefix}subscriptions`,
    taskRequests: `${prefix}task-requests`,
    taskEvents: `${prefix}task-events`,
    domainEvents: `${prefix}domain-events`,
    deliveries: `${prefix}deliveries`,
    callbackDeadLetters: `${prefix}callback-dead-letters`,
    callbackBacklogs: `${prefix}callback-backlogs`,
    onceCallbacks: `${prefix}once-callbacks`,
    idempotencyKeys: `${prefix}idempotency-keys`,
  };
}

const COMPACTED = ['resources', 'tasks', 'subscriptions', 'idempotencyKeys', 'callbackBacklogs'] as const;
/** how long the log topics (events, deliveries, once callbacks) keep records, for topics this service creates */
export const LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;
const DAY_MS = String(24 * 3600 * 1000);

/*
 * Compacted topics whose keys are forgotten (tombstoned) after a window:
 * finished tasks and ended subscriptions after TASK_RETENTION_MS, idempotency
 * keys after 24 h. The active segment is
 * never compacted, so it rolls hourly; compaction runs at least daily; a
 * tombstone stays a day, far longer than any running view lags, so every view
 * sees it before compaction drops it. Start-up replay then follows the live
 * keys, not history.
 */
const FORGETTING: (keyof Topics)[] = ['tasks', 'subscriptions', 'idempotencyKeys'];
const FORGETTING_CONFIG = [
  { name: 'segment.ms', value: String(3600 * 1000) },
  { name: 'max.compaction.lag.ms', value: DAY_MS },
  { name: 'delete.retention.ms', value: DAY_MS },
];

export function topicConfigs(topics: Topics, partitions: number, replicationFactor: number): ITopicConfig[] {
  return (Object.keys(topics) as (keyof Topics)[]).map((name) => {
    const compacted = (COMPACTED as readonly string[]).includes(name);
    return {
      topic: topics[name],
      numPartitions: partitions,
      replicationFactor,
      configEntries: compacted
        ? [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'min.compaction.lag.ms', value: '60000' },
            ...(FORGETTING.includes(name) ? FORGETTING_CONFIG : []),
          ]
        : [{ name: 'retention.ms', value: String(LOG_RETENTION_MS) }],
    };
  });
}

/** Creates what is missing; existing topics are left as they are. The brokers the cluster names, as it found them. */
export async function ensureTopics(
  admin: Admin,
  topics: Topics,
  partitions: number,
): Promise<{ host: string; port: number }[]> {
  const existing = new Set(await admin.listTopics());
  const { brokers } = await admin.describeCluster();
  const replicationFactor = Math.min(3, brokers.length);
  const missing = topicConfigs(topics, partitions, replicationFactor).filter((t) => !existing.has(t.topic));
  if (missing.length > 0) {
    try {
      await admin.createTopics({ topics: missing, waitForLeaders: false });
    } catch (err) {
      // Another process may have created them in between; that is the state we want.
      if (!(err instanceof Error && /already exists/i.test(err.message))) throw err;
    }
  }
  await waitForLeaders(admin, Object.values(topics), 30000);
  return brokers;
}

/*
 * kafkajs's own waitForLeaders gives up on UNKNOWN_TOPIC_OR_PARTITION, which a
 * broker answers for a moment after creation while metadata propagates.
 */
async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
      if (metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline)
      throw new KafkaUnavailableError(`topics have no leaders after ${timeoutMs} ms: ${topics.join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
