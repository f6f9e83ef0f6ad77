import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { KafkaPartitionReader } from '../../src/kafka/partition-reader';
import { KafkaUnavailableError, type IncomingRecord } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { newTopic } from '../support/new-topic';
import { until } from '../support/until';

/*
 * A task's event stream and its JSON pages read one partition from a given offset: on the real broker, the
 * reading hands over exactly the committed records from there, in order, passes markers and aborted records,
 * and is a plain assigned fetch: no consumer group joins, none is left behind.
 */
const kafka = new Kafka({ clientId: 'partition-reader-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
const logger = createLogger('silent');
let admin: Admin;
let producer: Producer;
let reader: KafkaPartitionReader;

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer({ transactionalId: uniquePrefix('reader-tx'), idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  reader = new KafkaPartitionReader(kafka, logger);
});
afterAll(async () => {
  await reader.closeAll();
  await producer.disconnect();
  await admin.disconnect();
});

async function write(topic: string, values: string[], outcome: 'commit' | 'abort'): Promise<void> {
  const tx = await producer.transaction();
  await tx.send({ topic, messages: values.map((value) => ({ key: 'k', value, partition: 1, headers: { h: value } })) });
  await (outcome === 'commit' ? tx.commit() : tx.abort());
}

async function end(topic: string): Promise<string> {
  return reader.endOffset(topic, 1, 5000);
}

test('hands over the committed records from the offset, in order, and passes markers and aborted records', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['a1', 'a2'], 'commit');
  await write(topic, ['x1', 'x2', 'x3'], 'abort');
  await write(topic, ['b1'], 'commit');
  await write(topic, ['y1'], 'abort');
  const before = await end(topic);
  const got: IncomingRecord[] = [];
  // From the second record on: offset 1 (a2); 0 is a1.
  const reading = await reader.open({ topic, partition: 1, fromOffset: '1', onRecord: (r) => void got.push(r) }, 5000);
  try {
    // Ends on an aborted transaction's marker: reached only by passing it.
    await reading.reached(before, 10000);
    expect(got.map((r) => r.value)).toEqual(['a2', 'b1']);
    expect(got.map((r) => [r.topic, r.partition, r.key, r.headers.h])).toEqual([
      [topic, 1, 'k', 'a2'],
      [topic, 1, 'k', 'b1'],
    ]);
    expect(BigInt(got[1].offset)).toBeGreaterThan(BigInt(got[0].offset));
    // Records committed after the reading opened come too, in order.
    await write(topic, ['c1', 'c2'], 'commit');
    await until(async () => (got.length === 4 ? true : undefined), 10000);
    expect(got.map((r) => r.value)).toEqual(['a2', 'b1', 'c1', 'c2']);
  } finally {
    await reading.stop();
  }
  expect(reader.openReadings).toBe(0);
});

test('no consumer group is joined or left behind: a reading is an assigned fetch', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['g1'], 'commit');
  const got: string[] = [];
  const reading = await reader.open(
    { topic, partition: 1, fromOffset: '0', onRecord: (r) => void got.push(r.value ?? '') },
    5000,
  );
  await until(async () => (got.length === 1 ? true : undefined), 10000);
  const { groups } = await admin.listGroups();
  await reading.stop();
  expect(groups.filter((g) => g.groupId.includes(topic))).toEqual([]);
});

test('a position below the log start (records deleted) goes on from the first record there is', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['d1', 'd2', 'd3', 'd4'], 'commit');
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '2' }] });
  const target = await end(topic);
  const got: string[] = [];
  const reading = await reader.open(
    { topic, partition: 1, fromOffset: '0', onRecord: (r) => void got.push(r.value ?? '') },
    5000,
  );
  try {
    await reading.reached(target, 10000);
    expect(got).toEqual(['d3', 'd4']);
  } finally {
    await reading.stop();
  }
});

test('a broker that does not answer: opening fails with KafkaUnavailableError within its timeout', async () => {
  const nowhere = new Kafka({
    clientId: 'partition-reader-nowhere',
    // A port nothing listens on: connections are refused.
    brokers: ['127.0.0.1:1'],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 300,
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 200 },
  });
  const lost = new KafkaPartitionReader(nowhere, logger);
  const started = Date.now();
  const opening = lost.open({ topic: 'any', partition: 0, fromOffset: '0', onRecord: () => undefined }, 1000);
  await expect(opening).rejects.toBeInstanceOf(KafkaUnavailableError);
  // The bound the api's 503 relies on (KAFKA_TIMEOUT_MS): generous for a busy machine, far below kafkajs's retries.
  expect(Date.now() - started).toBeLessThan(5000);
  expect(lost.openReadings).toBe(0);
});
