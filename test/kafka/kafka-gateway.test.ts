import { readFileSync } from 'node:fs';
import { createLogger } from '../../src/logger';
import { connectKafka, type KafkaGateway } from '../../src/kafka/kafka-gateway';
import { KAFKA_VERSION } from '../../src/embedded-kafka/kafka-version';
import type { FencingPublisher, IncomingRecord, ViewSpec } from '../../src/kafka/types';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

const logger = createLogger('silent');
const decodeN = (v: string) => JSON.parse(v) as { n: number };
const N_IN_RESOURCES: ViewSpec<{ n: number }> = { topic: 'resources', decode: decodeN };
const N_IN_SUBSCRIPTIONS: ViewSpec<{ n: number }> = { topic: 'subscriptions', decode: decodeN };

const connect = (name: string, partitions: number) =>
  connectKafka({
    brokers: testBrokers(),
    topicPrefix: uniquePrefix(name),
    partitions,
    timeoutMs: 10000,
    processName: 'test',
    logger,
  });

describe('the Kafka module on the real broker', () => {
  let kafka: KafkaGateway;

  beforeAll(async () => {
    kafka = await connect('gateway', 3);
  });
  afterAll(() => kafka.close());

  test('the broker runs the pinned Apache Kafka version', () => {
    const source = process.env.HOOKSTREAM_TEST_KAFKA;
    if (source === 'embedded') {
      // The broker's own startup report, from the process the test run started.
      const log = readFileSync(process.env.HOOKSTREAM_TEST_BROKER_LOG as string, 'utf8');
      expect(log).toMatch(new RegExp(`Kafka version: ${KAFKA_VERSION.replace(/\./g, '\\.')}\\b`));
    } else {
      // A container or an external broker: the image tag pins it, or the operator does; nothing to read here.
      expect(['container', 'external']).toContain(source);
    }
  });

  test("warmUp initializes the publisher's transactional ids before any write", async () => {
    const fresh = await connect('warm', 1);
    try {
      const publisher = fresh.publisher as FencingPublisher;
      expect(publisher.generation).toBeUndefined();
      fresh.warmUp();
      // Both ids (the publisher takes two in turn) initialized, and not a single transaction committed for it.
      await until(async () => (publisher.generation === 2 ? true : undefined));
      expect(fresh.publisherStats().transactions).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  test('publish returns each record its own position, and a group consumer receives them in key order', async () => {
    const topic = kafka.topics.taskEvents;
    const records = Array.from({ length: 20 }, (_, i) => ({ topic, key: `k${i % 4}`, value: JSON.stringify({ i }) }));
    const positions = await kafka.publisher.publish(records);
    expect(positions).toHaveLength(20);
    const received: IncomingRecord[] = [];
    const done = new Promise<void>((resolve) => {
      void kafka.runGroupConsumer({
        groupId: `${topic}.test-group`,
        topics: [topic],
        maxInFlight: 1,
        handle: async (r) => {
          received.push(r);
          if (received.length === 20) resolve();
        },
      });
    });
    await done;
    for (const r of received) {
      const i = JSON.parse(r.value as string).i as number;
      const p = positions[i];
      expect({ partition: r.partition, offset: r.offset }).toEqual({ partition: p.partition, offset: p.offset });
    }
    for (let k = 0; k < 4; k++) {
      const order = received.filter((r) => r.key === `k${k}`).map((r) => JSON.parse(r.value as string).i);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  });

  test('a state view reads its own writes and applies tombstones', async () => {
    const view = await kafka.view(N_IN_RESOURCES);
    expect(view.caughtUp).toBe(true);
    const written = await kafka.publisher.publish([{ topic: kafka.topics.resources, key: 'a', value: '{"n":1}' }]);
    await view.waitFor(written, 10000);
    expect(view.get('a')).toEqual({ n: 1 });
    await view.waitFor(
      await kafka.publisher.publish([{ topic: kafka.topics.resources, key: 'a', value: null }]),
      10000,
    );
    expect(view.get('a')).toBeUndefined();
  });

  test('a second view started later replays the compacted topic to the same state', async () => {
    await kafka.publisher.publish([{ topic: kafka.topics.subscriptions, key: 's1', value: '{"n":7}' }]);
    const view = await kafka.view(N_IN_SUBSCRIPTIONS);
    expect(view.get('s1')).toEqual({ n: 7 });
  });

  test('a topic has one view: the same spec shares it, another decoder is refused', async () => {
    expect(await kafka.view(N_IN_RESOURCES)).toBe(await kafka.view(N_IN_RESOURCES));
    const other: ViewSpec<string> = { topic: 'resources', decode: (v) => v };
    expect(() => kafka.view(other)).toThrow(/open already, with another decoder/);
  });
});
