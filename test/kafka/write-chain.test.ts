import { createLogger } from '../../src/logger';
import { connectKafka, type KafkaGateway } from '../../src/kafka/kafka-gateway';
import type { WriteChain } from '../../src/kafka/types';
import { committedRecords } from '../support/topic-contents';
import { testBrokers, uniquePrefix } from '../support/test-service';

/*
 * The runner enqueues a task's events (task.started first) without awaiting
 * each one: a chain of writes. What a read_committed reader sees of a chain
 * must be a prefix of it, in order: once one write fails or is given up on,
 * no later one lands.
 */
describe('a chain of writes on the real broker', () => {
  let kafka: KafkaGateway;

  beforeAll(async () => {
    kafka = await connectKafka({
      brokers: testBrokers(),
      topicPrefix: uniquePrefix('write-chain'),
      partitions: 1,
      timeoutMs: 10000,
      processName: 'test',
      logger: createLogger('silent'),
    });
  });
  afterAll(() => kafka.close());

  const record = (key: string) => ({ topic: kafka.topics.resources, key, value: JSON.stringify({ key }) });
  const landed = async (keys: string[]) => {
    const all = await committedRecords(testBrokers(), kafka.topics.resources);
    return all.map((r) => r.key).filter((k) => keys.includes(k));
  };

  test('writes made without awaiting each land in order', async () => {
    const publisher = kafka.fencingPublisher(`${kafka.topics.resources}.chain-a`);
    const chain: WriteChain = { broken: false };
    const keys = ['a1', 'a2', 'a3'];
    await Promise.all(keys.map((k) => publisher.publish([record(k)], { chain })));
    expect(await landed(keys)).toEqual(keys);
    await publisher.close();
  });

  test('once a write of the chain is given up on, the later ones are refused; other callers are not', async () => {
    const publisher = kafka.fencingPublisher(`${kafka.topics.resources}.chain-b`);
    const chain: WriteChain = { broken: false };
    // The first transaction (connecting the producer, initializing its id) takes far longer than 1 ms, so the
    // chain's first write is given up on while it waits in the queue behind it, and is never sent.
    const first = publisher.publish([record('b0')]);
    const head = publisher.publish([record('b1')], { chain, timeoutMs: 1 });
    const next = publisher.publish([record('b2')], { chain });
    const other = publisher.publish([record('b3')]);
    await expect(head).rejects.toThrow(/acknowledge/);
    await expect(next).rejects.toThrow(/chain/);
    await Promise.all([first, other]);
    await expect(publisher.publish([record('b4')], { chain })).rejects.toThrow(/chain/);
    expect(await landed(['b0', 'b1', 'b2', 'b3', 'b4'])).toEqual(['b0', 'b3']);
    await publisher.close();
  });
});
