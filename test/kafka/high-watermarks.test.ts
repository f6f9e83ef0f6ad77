import { Socket } from 'node:net';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { HighWatermarks } from '../../src/kafka/high-watermarks';
import { readingCluster } from '../../src/kafka/reader-clusters';
import { KafkaStateView } from '../../src/kafka/state-view';
import { createLogger } from '../../src/logger';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { newTopic } from '../support/new-topic';
import { until } from '../support/until';
import { requestWatchingSockets } from '../support/wire-requests';

/*
 * A view that has synced must hold every record of every transaction that had
 * written before the sync began, even when that transaction's commit marker
 * reaches the view's partition later than some other partition: the callback
 * bridge sees task.accepted and must then find the subscription written in
 * the same transaction. The last stable offset (what kafkajs's admin answers)
 * does not promise that; the high watermark does.
 */
const kafka = new Kafka({ clientId: 'high-watermarks-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
let admin: Admin;
let producer: Producer;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  producer = kafka.producer({ transactionalId: uniquePrefix('hw-tx'), idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
});
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await producer.disconnect();
  await admin.disconnect();
});

/** A just-created topic's first answer may name a leader that is not one yet: that call fails and refreshes. */
const firstAnswer = (watermarks: HighWatermarks, topic: string) =>
  until(
    () =>
      watermarks.of(topic).then(
        () => true,
        () => undefined,
      ),
    10000,
  );

test("the high watermark counts an open transaction's record; the admin client answers the last stable offset", async () => {
  const topic = await newTopic(admin, 'hw');
  const watermarks = new HighWatermarks(kafka);
  closers.push(() => watermarks.close());
  const tx = await producer.transaction();
  await tx.send({ topic, messages: [{ key: 'k', value: 'v', partition: 1 }] });
  try {
    expect(await watermarks.of(topic)).toEqual(
      new Map([
        [0, 0n],
        [1, 1n],
      ]),
    );
    const stable = await admin.fetchTopicOffsets(topic);
    expect(stable.find((p) => p.partition === 1)?.high).toBe('0');
  } finally {
    await tx.commit();
  }
  // Committed: the marker (written after commit() returns) becomes the end of both.
  await until(async () => ((await watermarks.of(topic)).get(1) === 2n ? true : undefined), 10000);
  const stableEnd = async () => (await admin.fetchTopicOffsets(topic)).find((p) => p.partition === 1)?.high;
  await until(async () => ((await stableEnd()) === '2' ? true : undefined), 10000);
});

test('a view synced while a transaction is open has its record once the sync returns', async () => {
  const topic = await newTopic(admin, 'hw');
  const watermarks = new HighWatermarks(kafka);
  closers.push(() => watermarks.close());
  // Tells the test when the sync has its target, so the commit comes after it (else the race is not run).
  let answered: () => void = () => undefined;
  const latest = async () => {
    const offsets = await watermarks.of(topic);
    answered();
    return offsets;
  };
  const view = new KafkaStateView(readingCluster(kafka), topic, (v) => v, latest, createLogger('silent'));
  closers.push(() => view.stop());
  await view.start(30000);

  const tx = await producer.transaction();
  await tx.send({ topic, messages: [{ key: 'written-in-the-open-transaction', value: 'here', partition: 0 }] });
  // What the view holds at the moment the sync returns: a sync that returned before the commit holds nothing.
  const targetKnown = new Promise<void>((resolve) => {
    answered = resolve;
  });
  const seenWhenSynced = view
    .syncedSince(Date.now() + 1, 30000)
    .then(() => view.get('written-in-the-open-transaction'));
  await targetKnown;
  await tx.commit();
  expect(await seenWhenSynced).toBe('here');
});

/** A client that notes the API key of every request it sends. */
function countingClient(): { kafka: Kafka; requests(apiKey: number): number } {
  const keys: number[] = [];
  const socketFactory = requestWatchingSockets((apiKey) => keys.push(apiKey));
  const counted = new Kafka({
    clientId: 'hw-count',
    brokers: testBrokers(),
    logLevel: logLevel.NOTHING,
    socketFactory,
  });
  return { kafka: counted, requests: (apiKey) => keys.filter((k) => k === apiKey).length };
}

test('repeated calls reuse the topic metadata: a ListOffsets each, not a Metadata request before every one', async () => {
  const METADATA = 3;
  const LIST_OFFSETS = 2;
  const topic = await newTopic(admin, 'hw');
  const { kafka: counted, requests } = countingClient();
  const watermarks = new HighWatermarks(counted);
  closers.push(() => watermarks.close());
  await firstAnswer(watermarks, topic);
  const [metadataBefore, listBefore] = [requests(METADATA), requests(LIST_OFFSETS)];
  for (let i = 0; i < 20; i += 1) await watermarks.of(topic);
  expect(requests(LIST_OFFSETS) - listBefore).toBe(20);
  expect(requests(METADATA) - metadataBefore).toBe(0);
});

test('once closed, it opens no connection again: a late call (a sync begun before the stop) is refused', async () => {
  // A background sync still running when its process stopped reconnected the closed cluster: a socket left open.
  const topic = await newTopic(admin, 'hw');
  const watermarks = new HighWatermarks(kafka);
  await firstAnswer(watermarks, topic);
  await watermarks.close();
  const sockets = () =>
    (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().filter((h) => h instanceof Socket)
      .length;
  const before = sockets();
  await expect(watermarks.of(topic)).rejects.toThrow(/closed/);
  expect(sockets()).toBe(before);
});
