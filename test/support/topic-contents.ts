import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';

export interface TopicRecord {
  key: string;
  value: string | null;
  partition: number;
  offset: string;
}

/**
 * Every committed record of a topic, in each partition's order, read as a
 * user's read_committed consumer would from the start to the end the topic
 * has when the call begins.
 */
export async function committedRecords(brokers: string[], topic: string): Promise<TopicRecord[]> {
  const kafka = new Kafka({ brokers, clientId: 'test-topic-contents', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const consumer = kafka.consumer({ groupId: `test-read-${randomUUID()}` });
  const found: TopicRecord[] = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = new Map<number, bigint>();
  await new Promise<void>((resolve) => {
    const check = () => {
      if (ends.every((e) => (seen.get(e.partition) ?? 0n) >= BigInt(e.high))) resolve();
    };
    // Batches of markers only never reach eachMessage, but do move the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      seen.set(payload.partition, BigInt(payload.lastOffset) + 1n);
      check();
    });
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = message.key?.toString() ?? '';
        found.push({ key, value: message.value?.toString() ?? null, partition, offset: message.offset });
      },
    });
    check();
  });
  await consumer.disconnect();
  return found;
}

/** The latest committed value of `key` (null: a tombstone; undefined: never written). */
export async function latestValue(brokers: string[], topic: string, key: string): Promise<string | null | undefined> {
  return (await committedRecords(brokers, topic)).filter((r) => r.key === key).at(-1)?.value;
}
