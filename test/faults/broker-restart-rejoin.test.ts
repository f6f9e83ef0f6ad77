import { Writable } from 'node:stream';
import { javaMajorVersion } from '../../src/embedded-kafka/local-broker-jars';
import { createKafkaClient } from '../../src/kafka/kafka-client';
import { runGroupConsumer } from '../../src/kafka/group-consumer';
import type { GroupConsumerHandle } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { OwnBroker } from '../support/own-broker';
import { uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

const hasJava = (javaMajorVersion() ?? 0) >= 17;
const maybe = hasJava ? describe : describe.skip;
if (!hasJava)
  console.warn('broker-restart-rejoin test skipped: it starts its own broker from the Kafka jars (Java 17+)');

/** Longer than the waits the test allows after the restart: a join held up by the old member cannot pass in time. */
const SESSION_TIMEOUT_MS = 45000;
/** for the producer to write again (the restarted broker elects the partition's leader), then for the consumer */
const SEND_WITHIN_MS = 15000;
const REJOIN_WITHIN_MS = 25000;

/*
 * A group consumer whose kafkajs retries run out while the broker is away is replaced by a new member, and the old
 * one, which could not leave, is still in the group when the broker comes back: before stale-member.ts the new
 * member's join waited out the old one's session (10 s by default) after every broker crash. Here the session is
 * longer than the test waits, so the consumer handles records again within it only if the old member was taken out.
 */
maybe('a consumer replaced during a broker outage', () => {
  const broker = new OwnBroker();
  let consumer: GroupConsumerHandle | undefined;

  beforeAll(() => broker.start(), 180000);
  afterAll(async () => {
    await consumer?.stop();
    await broker.remove();
  }, 60000);

  test('takes its old member out of the group, so it resumes before that member would expire', async () => {
    const lines: { msg?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line.startsWith('{')) lines.push(JSON.parse(line));
        done();
      },
    });
    const logger = createLogger('debug', 'test', sink);
    const kafka = createKafkaClient({ brokers: [broker.bootstrap], clientId: 'rejoin', timeoutMs: 5000, logger });
    const topic = `${uniquePrefix('rejoin')}events`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true });
    const send = async (value: string) => {
      await producer.connect();
      await producer.send({ topic, messages: [{ key: 'k', value }] });
    };
    const handled: string[] = [];
    consumer = await runGroupConsumer(
      kafka,
      {
        groupId: `${topic}.group`,
        topics: [topic],
        maxInFlight: 10,
        sessionTimeoutMs: SESSION_TIMEOUT_MS,
        handle: async (record) => {
          handled.push(record.value ?? '');
        },
      },
      logger,
    );
    await send('before');
    await until(async () => (handled.includes('before') ? true : undefined), 60000, 50, 'the first record');

    await broker.kill();
    // The outage lasts until kafkajs has given the member up and started a new one (its retries take seconds).
    await until(
      async () => (lines.some((l) => l.msg?.includes('consumer stopped on an error')) ? true : undefined),
      60000,
      100,
      'the consumer to crash while the broker is away',
    );
    await broker.start();
    const back = Date.now();
    // The producer's own retries may run out while the restarted broker elects the partition's leader.
    await until(
      () =>
        send('after').then(
          () => true,
          () => undefined,
        ),
      SEND_WITHIN_MS,
      200,
      'the next record sent',
    );
    await until(async () => (handled.includes('after') ? true : undefined), REJOIN_WITHIN_MS, 50, 'the next record');
    expect(Date.now() - back).toBeLessThan(SESSION_TIMEOUT_MS);
    expect(lines.some((l) => l.msg === 'left the group for a replaced consumer')).toBe(true);
    await producer.disconnect();
  }, 240000);
});
