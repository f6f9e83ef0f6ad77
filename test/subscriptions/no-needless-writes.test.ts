import { Kafka, logLevel } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/** Every committed record of a topic, read as a user's read_committed consumer would, up to the end offsets. */
async function committedRecords(topic: string): Promise<number> {
  const kafka = new Kafka({ brokers: testBrokers(), clientId: 'test-count', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
  await admin.disconnect();
  const consumer = kafka.consumer({ groupId: `count-${randomUUID()}`, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let count = 0;
  const reached = new Map<number, number>();
  // A batch of only transaction markers never reaches eachBatch, but still moves the position.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    reached.set(payload.partition, Math.max(reached.get(payload.partition) ?? 0, Number(payload.lastOffset) + 1));
  });
  await consumer.run({
    eachBatch: async ({ batch }) => {
      count += batch.messages.length;
      reached.set(batch.partition, Number(batch.lastOffset()) + 1);
    },
  });
  const done = () => [...ends].every(([p, end]) => end === 0 || (reached.get(p) ?? 0) >= end);
  try {
    await until(async () => (done() ? true : undefined), 30000);
  } finally {
    await consumer.disconnect();
  }
  return count;
}

describe('no needless writes', () => {
  let service: RunningService;
  let receiver: Receiver;
  afterAll(async () => {
    await receiver?.stop();
    await service?.stop();
  });

  // Above the sum of its bounds: the start's 120 s (KAFKA_STARTUP_TIMEOUT_MS), 15 s for the first subscription and
  // 15 s for the writes racing, 60 s for the callbacks and 30 s to count the records.
  test('while the bridge delivers hundreds of callbacks, subscription writes all succeed and the subscriptions topic holds only subscriptions', async () => {
    const prefix = uniquePrefix('needless');
    // 100 subscription writes at once, beside a 300-order write and its 300 callbacks' history, on a machine whose
    // cores may both be busy: each may take longer than the default 5 s. What is tested is which records are written.
    service = await startTestService(prefix, { role: 'all', env: { KAFKA_TIMEOUT_MS: '15000' } });
    receiver = await new Receiver(() => ({ status: 200 })).start();
    const sub = await http(service.url, '/subscriptions', {
      body: { callbackUrl: `${receiver.url}/all`, mode: 'continuous', events: ['order.created'] },
    });
    expect(sub.status).toBe(201);

    const orders = Array.from({ length: 300 }, (_, i) => ({ orderNumber: i, itemCount: 1, status: 'open' }));
    const created = http(service.url, '/orders', { body: { order: orders } });
    // Subscription writes race the bridge's callbacks; on a healthy broker every one is a 201.
    const subscribing = Promise.all(
      Array.from({ length: 100 }, () =>
        http(service.url, '/subscriptions', {
          body: { callbackUrl: `${receiver.url}/other`, mode: 'continuous', events: ['order.deleted'] },
        }),
      ),
    );
    expect((await created).status).toBe(201);
    const statuses = (await subscribing).map((r) => r.status);
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    await until(
      async () => (receiver.received.filter((r) => r.path === '/all').length >= 300 ? true : undefined),
      60000,
    );

    // 101 subscriptions created, none ended: one record each. Views sync without writing markers.
    expect(await committedRecords(`${prefix}subscriptions`)).toBe(101);
  }, 300000);
});
