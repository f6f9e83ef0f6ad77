import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { KafkaHealth } from '../../src/kafka/kafka-health';
import { PartitionMap } from '../../src/kafka/partition-map';
import { TransactionalPublisher, type TransactionalPublisherOptions } from '../../src/kafka/transactional-publisher';
import { createLogger } from '../../src/logger';
import { testBrokers } from './test-service';
import { until } from './until';

export interface TestPublisher {
  admin: Admin;
  publisher: TransactionalPublisher;
  health: KafkaHealth;
  /** closes the publisher, the health probe and the admin */
  close(): Promise<void>;
}

/**
 * A TransactionalPublisher of its own on the test broker, for the tests of the publisher itself: the topics created,
 * their partitions known (a broker answers NOT_LEADER for a moment after creating one).
 */
export async function testPublisher(
  kafka: Kafka,
  topics: ITopicConfig[],
  options: Omit<TransactionalPublisherOptions, 'timeoutMs'> & { timeoutMs?: number },
): Promise<TestPublisher> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics });
  const partitions = new PartitionMap(admin);
  const names = topics.map((t) => t.topic);
  await until(
    () =>
      partitions.load(names).then(
        () => true,
        () => undefined,
      ),
    30000,
  );
  const health = new KafkaHealth(testBrokers());
  const publisher = new TransactionalPublisher(kafka, partitions, health, createLogger('silent'), {
    timeoutMs: 10000,
    ...options,
  });
  return {
    admin,
    publisher,
    health,
    async close() {
      await publisher.close();
      health.stop();
      await admin.disconnect();
    },
  };
}
