import { randomUUID } from 'node:crypto';
import type { Admin } from 'kafkajs';
import type { Logger } from '../logger';
import { runGroupConsumer } from './group-consumer';
import { createKafkaClient } from './kafka-client';
import { KafkaHealth } from './kafka-health';
import { PartitionMap } from './partition-map';
import { KafkaStateView } from './state-view';
import { ensureTopics, topicNames, type Topics } from './topics';
import { TransactionalPublisher } from './transactional-publisher';
import type { ConsumerHandle, GroupConsumerOptions, Publisher, StateView } from './types';

export interface KafkaGatewayOptions {
  brokers: string[];
  topicPrefix: string;
  partitions: number;
  timeoutMs: number;
  /** names this process in client ids and its transactional id */
  processName: string;
  logger: Logger;
}

/** Everything the service needs from Kafka, behind the interfaces of ./types. */
export interface KafkaGateway {
  readonly topics: Topics;
  readonly publisher: Publisher;
  readonly health: KafkaHealth;
  readonly brokers: string[];
  /** transactions committed by this process's publisher, and what they carried */
  publisherStats(): { transactions: number; records: number; calls: number };
  /** The process's one view of a compacted topic, started on first use and shared after. */
  view<T>(topic: string, decode: (value: string) => T): Promise<StateView<T>>;
  /** every view started so far has caught up (readiness) */
  viewsCaughtUp(): boolean;
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  close(): Promise<void>;
}

export async function connectKafka(options: KafkaGatewayOptions): Promise<KafkaGateway> {
  const logger = options.logger.child({ component: 'kafka' });
  const kafka = createKafkaClient({ brokers: options.brokers, clientId: `hookstream-${options.processName}`, timeoutMs: options.timeoutMs, logger });
  const health = new KafkaHealth(options.brokers);
  await health.probe();
  health.start();
  const admin: Admin = kafka.admin();
  await admin.connect();
  const topics = topicNames(options.topicPrefix);
  await ensureTopics(admin, topics, options.partitions);
  const partitions = new PartitionMap(admin);
  await partitions.load(Object.values(topics));
  const publisher = new TransactionalPublisher(kafka, partitions, health, logger, {
    transactionalId: `${options.topicPrefix}${options.processName}-${randomUUID()}`,
    timeoutMs: options.timeoutMs,
    maxBatchRecords: 500,
  });
  const views = new Map<string, Promise<KafkaStateView<unknown>>>();
  const started: KafkaStateView<unknown>[] = [];

  async function startView<T>(topic: string, decode: (value: string) => T): Promise<KafkaStateView<T>> {
    const view = new KafkaStateView<T>(kafka, topic, decode, logger);
    started.push(view as KafkaStateView<unknown>);
    const count = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;
    // Views can take a while to read a large topic: allow far more than one request's timeout.
    await view.start(publisher, Array.from({ length: count }, (_, i) => i), Math.max(60000, options.timeoutMs));
    return view;
  }
  const consumers: ConsumerHandle[] = [];

  return {
    topics,
    publisher,
    health,
    brokers: options.brokers,
    publisherStats: () => ({ ...publisher.stats }),
    view<T>(topic: string, decode: (value: string) => T): Promise<StateView<T>> {
      let view = views.get(topic);
      if (!view) views.set(topic, (view = startView(topic, decode) as Promise<KafkaStateView<unknown>>));
      return view as Promise<StateView<T>>;
    },
    viewsCaughtUp: () => started.every((v) => v.caughtUp),
    async runGroupConsumer(consumerOptions) {
      const handle = await runGroupConsumer(kafka, consumerOptions, logger);
      consumers.push(handle);
      return handle;
    },
    async close() {
      await Promise.all(consumers.map((c) => c.stop()));
      await Promise.all(started.map((v) => v.stop()));
      await publisher.close();
      await admin.disconnect().catch(() => undefined);
      health.stop();
    },
  };
}
