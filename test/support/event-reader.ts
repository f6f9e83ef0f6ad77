import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';

export interface ReadEvent {
  key: string;
  offset: string;
  partition: number;
  headers: Record<string, string>;
  value: { event: string; taskId: string; attempt: number; data: Record<string, unknown> };
}

/**
 * Reads a task's events as a user's own kafkajs consumer would: from the
 * partition and offset of the tracking resource, keeping the task's key,
 * until a final event (or the deadline).
 */
export async function readTaskEvents(
  brokers: string[],
  where: { topic: string; partition?: number; offset?: number; key: string },
  timeoutMs = 30000,
): Promise<ReadEvent[]> {
  const kafka = new Kafka({ brokers, clientId: 'test-user', logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test-user-${randomUUID()}` });
  const events: ReadEvent[] = [];
  await consumer.connect();
  // Without a position, read every partition from the start, as a client that only knows the key would.
  await consumer.subscribe({ topic: where.topic, fromBeginning: where.partition === undefined });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no final event for ${where.key} in ${timeoutMs} ms; got ${events.map((e) => e.value.event).join(', ')}`,
            ),
          ),
        timeoutMs,
      );
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          if ((where.partition !== undefined && partition !== where.partition) || message.key?.toString() !== where.key)
            return;
          const value = JSON.parse(message.value?.toString() ?? 'null');
          const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
          events.push({ key: where.key, offset: message.offset, partition, headers, value });
          if (['task.succeeded', 'task.failed', 'task.cancelled'].includes(value.event)) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
      if (where.partition !== undefined)
        consumer.seek({ topic: where.topic, partition: where.partition, offset: String(where.offset ?? 0) });
    });
  } finally {
    await consumer.disconnect();
  }
  return events;
}
