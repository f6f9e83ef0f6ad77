import { Kafka, logLevel } from 'kafkajs';
import type { TransactionalPublisher } from '../../src/kafka/transactional-publisher';
import { testPublisher, type TestPublisher } from '../support/test-publisher';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { committedRecords } from '../support/topic-contents';
import { until } from '../support/until';
import { requestWatchingSockets } from '../support/wire-requests';

/*
 * The shared publisher takes its transactional ids in turn, so a transaction never waits for the markers of the
 * commit just before it (CONCURRENT_TRANSACTIONS). What must hold all the same: one transaction at a time, records
 * in the order they were sent, and after a failed transaction every id initialized again before it writes.
 */
const INIT_PRODUCER_ID = 22;
const END_TXN = 26;
/** [api key, transactional id] of every InitProducerId and committing EndTxn sent */
const sent: [number, string][] = [];

/** A request's transactional id: the first field of both bodies, after the header's client id (both int16 strings). */
function transactionalIdOf(request: Buffer): string {
  const afterClientId = 14 + request.readInt16BE(12);
  const length = request.readInt16BE(afterClientId);
  return request.toString('utf8', afterClientId + 2, afterClientId + 2 + length);
}

const socketFactory = requestWatchingSockets((apiKey, request) => {
  // EndTxn's body ends with `committed` (a boolean): an abort is not a turn.
  if (apiKey === END_TXN && request[request.length - 1] !== 1) return;
  if (apiKey === INIT_PRODUCER_ID || apiKey === END_TXN) sent.push([apiKey, transactionalIdOf(request)]);
});
const kafka = new Kafka({ clientId: 'turns-test', brokers: testBrokers(), logLevel: logLevel.NOTHING, socketFactory });
const topic = `${uniquePrefix('turns')}records`;
const ids = [uniquePrefix('turns-a'), uniquePrefix('turns-b')];
let kit: TestPublisher;
let publisher: TransactionalPublisher;

beforeAll(async () => {
  kit = await testPublisher(kafka, [{ topic, numPartitions: 1 }], {
    transactionalIds: ids,
    // One record per transaction: concurrent publishes then queue up as consecutive transactions.
    maxBatchRecords: 1,
    // No refusal of a large record before it is sent: the broker's refusal is how a test here makes a transaction fail.
    maxSendBytes: 100_000_000,
  });
  publisher = kit.publisher;
});
afterAll(() => kit?.close());

const commitsSince = (from: number) =>
  sent
    .slice(from)
    .filter(([key]) => key === END_TXN)
    .map(([, id]) => id);

test('back-to-back transactions take the ids in turn, and their records land in the order they were sent', async () => {
  const from = sent.length;
  // Published at once: each waits for the transaction before it, which the other id committed.
  await Promise.all(
    [0, 1, 2, 3, 4, 5].map((i) => publisher.publish([{ topic, key: 'one-key', value: `record ${i}` }])),
  );

  expect(commitsSince(from)).toEqual([ids[0], ids[1], ids[0], ids[1], ids[0], ids[1]]);
  const records = await committedRecords(testBrokers(), topic);
  expect(records.map((r) => r.value)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `record ${i}`));
});

test('after a failed transaction, every id is initialized again before its next commit', async () => {
  // Larger than the broker's message.max.bytes (1 MB by default): the broker refuses the send, the transaction fails.
  await expect(publisher.publish([{ topic, key: 'too-big', value: 'x'.repeat(1100 * 1024) }])).rejects.toThrow();
  const from = sent.length;
  // The failure marked Kafka down until its health probe answers: publish again until that lets it through.
  await until(
    () =>
      publisher.publish([{ topic, key: 'after', value: 'first after' }]).then(
        () => true,
        () => undefined,
      ),
    30000,
  );
  await publisher.publish([{ topic, key: 'after', value: 'second after' }]);

  const after = sent.slice(from).map(([key, id]) => `${key === INIT_PRODUCER_ID ? 'init' : 'commit'} ${id}`);
  // The failed id keeps its turn; each id is initialized before its first commit after the failure.
  expect(after.filter((s) => s.startsWith('commit'))).toEqual([`commit ${ids[0]}`, `commit ${ids[1]}`]);
  for (const id of ids) {
    expect(after.indexOf(`init ${id}`)).toBeGreaterThanOrEqual(0);
    expect(after.indexOf(`init ${id}`)).toBeLessThan(after.indexOf(`commit ${id}`));
  }
});
