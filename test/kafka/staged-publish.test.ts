import { Kafka, logLevel } from 'kafkajs';
import type { TransactionalPublisher } from '../../src/kafka/transactional-publisher';
import type { OutgoingRecord } from '../../src/kafka/types';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { testPublisher, type TestPublisher } from '../support/test-publisher';
import { until } from '../support/until';
import { requestWatchingSockets } from '../support/wire-requests';

/*
 * A staged write (task.accepted, then the snapshot holding its offset) is one transaction in two sends. When the
 * caller says where the second send will write, both sends' partitions join the transaction in one
 * AddPartitionsToTxn (the kafkajs patch's addPartitions), a broker round trip fewer on every accepted task.
 */
const ADD_PARTITIONS_TO_TXN = 24;
/** AddPartitionsToTxn requests sent, correlation id blanked: a retry (CONCURRENT_TRANSACTIONS) is the same bytes */
const addPartitions: string[] = [];
const socketFactory = requestWatchingSockets((apiKey, request) => {
  if (apiKey !== ADD_PARTITIONS_TO_TXN) return;
  const copy = Buffer.from(request);
  copy.writeInt32BE(0, 8);
  addPartitions.push(copy.toString('hex'));
});
const kafka = new Kafka({ clientId: 'staged-test', brokers: testBrokers(), logLevel: logLevel.NOTHING, socketFactory });
let kit: TestPublisher;
let publisher: TransactionalPublisher;
const [events, snapshots] = [`${uniquePrefix('staged')}events`, `${uniquePrefix('staged')}snapshots`];

beforeAll(async () => {
  const topics = [
    { topic: events, numPartitions: 3 },
    { topic: snapshots, numPartitions: 5 },
  ];
  kit = await testPublisher(kafka, topics, { transactionalIds: [uniquePrefix('staged-tx')], maxBatchRecords: 500 });
  publisher = kit.publisher;
  // The first transaction also initializes the id; the counts below are of later ones.
  await until(
    () =>
      publisher.publish([{ topic: events, key: 'warm', value: 'x' }]).then(
        () => true,
        () => undefined,
      ),
    30000,
  );
});
afterAll(() => kit?.close());

async function staged(key: string, thenTo?: { topic: string; key: string }[]) {
  const second = (offset: string): OutgoingRecord[] => [{ topic: snapshots, key, value: `at ${offset}` }];
  const before = addPartitions.length;
  const positions = await publisher.publishStaged(
    [{ topic: events, key, value: 'accepted' }],
    ([first]) => second(first.offset),
    { thenTo },
  );
  return { positions, addPartitions: new Set(addPartitions.slice(before)).size };
}

test('with the second stage named ahead, one AddPartitionsToTxn covers both sends; without, each send adds its own', async () => {
  const ahead = await staged('task-ahead', [{ topic: snapshots, key: 'task-ahead' }]);
  const plain = await staged('task-plain');
  expect(ahead.addPartitions).toBe(1);
  expect(plain.addPartitions).toBe(2);
  for (const { positions } of [ahead, plain]) {
    expect(positions.map((p) => p.topic)).toEqual([events, snapshots]);
  }
});

test("what the second stage wrote is committed where its positions say, with the first stage's offset in it", async () => {
  const { positions } = await staged('task-read', [{ topic: snapshots, key: 'task-read' }]);
  const [first, second] = positions;
  const consumer = kafka.consumer({ groupId: uniquePrefix('staged-read'), readUncommitted: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: snapshots, fromBeginning: true });
    const seen = new Promise<string>((resolve) => {
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          if (message.key?.toString() === 'task-read' && partition === second.partition) {
            resolve(`${message.offset}:${message.value?.toString()}`);
          }
        },
      });
    });
    expect(await seen).toBe(`${second.offset}:at ${first.offset}`);
  } finally {
    await consumer.disconnect();
  }
});
