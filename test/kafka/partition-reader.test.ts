import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { KafkaPartitionReader } from '../../src/kafka/partition-reader';
import { KafkaUnavailableError, RecordsDeletedError, type IncomingRecord } from '../../src/kafka/types';
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
  // One producer, so the layout is fixed: a1 0, a2 1, marker 2, x1-x3 3-5, marker 6, b1 7, marker 8, y1 9, marker 10.
  await write(topic, ['a1', 'a2'], 'commit');
  await write(topic, ['x1', 'x2', 'x3'], 'abort');
  await write(topic, ['b1'], 'commit');
  await write(topic, ['y1'], 'abort');
  const before = await end(topic);
  expect(before).toBe('11');
  const got: IncomingRecord[] = [];
  const reading = await reader.open({ topic, partition: 1, fromOffset: '1', onRecord: (r) => void got.push(r) }, 5000);
  try {
    // Ends on an aborted transaction's marker: reached only by passing it.
    await reading.reached(before, 10000);
    expect(got.map((r) => [r.offset, r.value, r.key, r.headers.h, r.topic, r.partition])).toEqual([
      ['1', 'a2', 'k', 'a2', topic, 1],
      ['7', 'b1', 'k', 'b1', topic, 1],
    ]);
    // Records committed after the reading opened come too, in order.
    await write(topic, ['c1', 'c2'], 'commit');
    await until(async () => (got.length === 4 ? true : undefined), 10000);
    expect(got.map((r) => r.value)).toEqual(['a2', 'b1', 'c1', 'c2']);
  } finally {
    await reading.stop();
  }
  // From inside the aborted transaction: none of it.
  const inside: string[] = [];
  const second = await reader.open(
    { topic, partition: 1, fromOffset: '4', until: before, onRecord: (r) => void inside.push(r.value ?? '') },
    5000,
  );
  await second.reached(before, 10000);
  await second.stop();
  expect(inside).toEqual(['b1']);
  expect(reader.openReadings).toBe(0);
});

test('a reading to `until` hands over nothing from there, ends, and leaves its connection to the next reading', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['u1', 'u2'], 'commit');
  await write(topic, ['u3'], 'commit');
  // u1 0, u2 1, marker 2, u3 3, marker 4: up to, not including, u3.
  const got: string[] = [];
  const onRecord = (r: IncomingRecord) => void got.push(r.value ?? '');
  const page = await reader.open({ topic, partition: 1, fromOffset: '0', until: '3', onRecord }, 5000);
  const idle = reader.idleConnections;
  await page.reached('3', 10000);
  await page.stop();
  expect(got).toEqual(['u1', 'u2']);
  expect(reader.idleConnections).toBe(idle + 1);
  // The next reading takes it, and reads on the kept connection.
  const next = await reader.open({ topic, partition: 1, fromOffset: '3', onRecord }, 5000);
  expect(reader.idleConnections).toBe(idle);
  await next.reached('5', 10000);
  await next.stop();
  expect(got).toEqual(['u1', 'u2', 'u3']);
});

test('a receiver that throws ends the reading (onError) instead of being handed the record for ever', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['t1', 't2'], 'commit');
  let calls = 0;
  const failed = new Promise<Error>((resolve) => {
    void reader.open(
      {
        topic,
        partition: 1,
        fromOffset: '0',
        onRecord: () => {
          calls += 1;
          throw new Error('receiver broke');
        },
        onError: resolve,
      },
      5000,
    );
  });
  expect((await failed).message).toBe('receiver broke');
  expect(calls).toBe(1);
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

test('refuseDeleted: opening below the log start rejects with RecordsDeletedError naming where the log starts', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['d1', 'd2', 'd3', 'd4'], 'commit');
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '2' }] });
  const opening = reader.open(
    { topic, partition: 1, fromOffset: '1', refuseDeleted: true, onRecord: () => undefined },
    5000,
  );
  await expect(opening).rejects.toBeInstanceOf(RecordsDeletedError);
  await expect(opening).rejects.toMatchObject({ topic, partition: 1, firstOffset: 2n });
  // At the log start itself nothing is missing.
  const at = await reader.open(
    { topic, partition: 1, fromOffset: '2', refuseDeleted: true, onRecord: () => undefined },
    5000,
  );
  await at.stop();
});

test('refuseDeleted: a reading that falls below the log start ends with RecordsDeletedError, and skips nothing', async () => {
  const topic = await newTopic(admin, 'reader');
  await write(topic, ['d1', 'd2', 'd3', 'd4'], 'commit');
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const got: string[] = [];
  const errors: Error[] = [];
  const reading = await reader.open(
    {
      topic,
      partition: 1,
      fromOffset: '0',
      refuseDeleted: true,
      // The first record holds the reading while the records after its fetch are written and deleted.
      onRecord: async (r) => {
        got.push(r.value ?? '');
        if (got.length === 1) await gate;
      },
      onError: (err) => void errors.push(err),
    },
    5000,
  );
  try {
    await until(async () => (got.length === 1 ? true : undefined), 10000, 20, 'the first record');
    await write(topic, ['d5', 'd6'], 'commit');
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 1, offset: '7' }] });
    release();
    await until(async () => (errors.length > 0 ? true : undefined), 10000, 20, 'the reading ends');
    expect(errors[0]).toBeInstanceOf(RecordsDeletedError);
    expect(errors[0]).toMatchObject({ firstOffset: 7n });
    // What its one fetch held was handed over; d5 and d6 were deleted before it got to them: never handed over.
    expect(got).toEqual(['d1', 'd2', 'd3', 'd4']);
  } finally {
    release();
    await reading.stop();
  }
});

test('a broker that accepts connections and never answers: opening fails within its timeout', async () => {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => void sockets.add(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as AddressInfo;
  const nowhere = new Kafka({
    clientId: 'partition-reader-silent',
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    requestTimeout: 1000,
    retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 200 },
  });
  const lost = new KafkaPartitionReader(nowhere, logger);
  try {
    const started = Date.now();
    const opening = lost.open({ topic: 'any', partition: 0, fromOffset: '0', onRecord: () => undefined }, 1000);
    await expect(opening).rejects.toBeInstanceOf(KafkaUnavailableError);
    // The api's 503 comes within KAFKA_TIMEOUT_MS: the reading does not wait for the silent broker's answer.
    expect(Date.now() - started).toBeLessThan(2500);
    expect(lost.openReadings).toBe(0);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
});

test('while no broker answers the probe, a reading and an end offset are refused at once, as writes are', async () => {
  const topic = await newTopic(admin, 'reader-down');
  const health = { up: false };
  const down = new KafkaPartitionReader(kafka, logger, health);
  try {
    const opening = down.open({ topic, partition: 0, fromOffset: '0', onRecord: () => undefined }, 60000);
    await expect(opening).rejects.toThrow(KafkaUnavailableError);
    await expect(down.endOffset(topic, 0, 60000)).rejects.toThrow('Kafka is not reachable');
    expect(down.openReadings).toBe(0);
    // Back up: the same reader reads again.
    health.up = true;
    expect(BigInt(await down.endOffset(topic, 0, 10000))).toBeGreaterThanOrEqual(0n);
  } finally {
    await down.closeAll();
  }
});
