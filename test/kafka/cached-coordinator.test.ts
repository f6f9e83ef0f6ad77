import { Kafka, logLevel, type Producer } from 'kafkajs';
import { producerWithCachedCoordinator } from '../../src/kafka/cached-coordinator';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { newTopic } from '../support/new-topic';
import { until } from '../support/until';

/*
 * kafkajs looks the transaction coordinator up (FindCoordinator, "GroupCoordinator" in its request names) before
 * every AddPartitionsToTxn and EndTxn. The producer this project makes looks it up once, and its transactions
 * commit all the same: every record is there for a read_committed consumer.
 */
const kafka = new Kafka({ clientId: 'cached-coordinator-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
const TRANSACTIONS = 5;

async function freshTopic(): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await newTopic(admin, 'coordinator');
  } finally {
    await admin.disconnect();
  }
}

/** Runs TRANSACTIONS two-record transactions; returns how many coordinator lookups the producer sent. */
async function lookupsFor(producer: Producer, topic: string): Promise<number> {
  let lookups = 0;
  producer.on(producer.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'GroupCoordinator') lookups += 1;
  });
  await producer.connect();
  try {
    for (let i = 0; i < TRANSACTIONS; i += 1) {
      const tx = await producer.transaction();
      const messages = [
        { key: `a${i}`, value: 'x', partition: 0 },
        { key: `b${i}`, value: 'y', partition: 1 },
      ];
      await tx.send({ topic, messages });
      await tx.commit();
    }
  } finally {
    await producer.disconnect();
  }
  return lookups;
}

async function committedCount(topic: string): Promise<number> {
  const consumer = kafka.consumer({ groupId: uniquePrefix('coordinator-reader'), readUncommitted: false });
  let count = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async () => {
        count += 1;
      },
    });
    await until(async () => (count >= 4 * TRANSACTIONS ? true : undefined), 30000);
  } finally {
    await consumer.disconnect();
  }
  return count;
}

test("one coordinator lookup for a producer's transactions, where kafkajs makes several per transaction", async () => {
  const topic = await freshTopic();
  const options = { idempotent: true, maxInFlightRequests: 1 };
  const plain = await lookupsFor(kafka.producer({ ...options, transactionalId: uniquePrefix('plain-tx') }), topic);
  const cached = await lookupsFor(
    producerWithCachedCoordinator(kafka, { ...options, transactionalId: uniquePrefix('cached-tx') }),
    topic,
  );
  expect(plain).toBeGreaterThanOrEqual(2 * TRANSACTIONS);
  expect(cached).toBe(1);
  expect(await committedCount(topic)).toBe(4 * TRANSACTIONS);
}, 90000);
