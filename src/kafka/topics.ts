import type { Admin, ITopicConfig } from 'kafkajs';

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
  /** callback attempts, key = subscription UUID */
  deliveries: string;
  /** callbacks waiting for a retry, key = subscription UUID */
  callbackRetries: string;
  /** callbacks that exhausted their attempts, key = subscription UUID */
  callbackDeadLetters: string;
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
    callbackRetries: `${prefix}callback-retries`,
    callbackDeadLetters: `${prefix}callback-dead-letters`,
  };
}

const COMPACTED = ['resources', 'tasks', 'subscriptions'] as const;
const WEEK_MS = String(7 * 24 * 3600 * 1000);

export function topicConfigs(topics: Topics, partitions: number, replicationFactor: number): ITopicConfig[] {
  return (Object.keys(topics) as (keyof Topics)[]).map((name) => {
    const compacted = (COMPACTED as readonly string[]).includes(name);
    return {
      topic: topics[name],
      numPartitions: partitions,
      replicationFactor,
      configEntries: compacted
        ? [{ name: 'cleanup.policy', value: 'compact' }, { name: 'min.compaction.lag.ms', value: '60000' }]
        : [{ name: 'retention.ms', value: WEEK_MS }],
    };
  });
}

/** Creates what is missing; existing topics are left as they are. */
export async function ensureTopics(admin: Admin, topics: Topics, partitions: number): Promise<void> {
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
    if (Date.now() > deadline) throw new Error(`topics have no leaders after ${timeoutMs} ms: ${topics.join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
