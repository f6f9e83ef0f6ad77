import { Kafka, logLevel } from 'kafkajs';
import { HandBack, runGroupConsumer } from '../../src/kafka/group-consumer';
import { MembershipLease } from '../../src/kafka/membership-lease';
import type { GroupConsumerHandle } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { newTopic } from '../support/new-topic';
import { testBrokers } from '../support/test-service';
import { until } from '../support/until';

/** The broker's least session (group.min.session.timeout.ms, by default): the member is dropped soonest. */
const SESSION_TIMEOUT_MS = 6000;

const kafka = new Kafka({ clientId: 'test-membership', brokers: testBrokers(), logLevel: logLevel.NOTHING });
const consumers: GroupConsumerHandle[] = [];

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
});

/** A fresh topic whose partitions all have leaders: a group subscribing before is told UNKNOWN_TOPIC_OR_PARTITION. */
async function createTopic(name: string, numPartitions: number): Promise<string> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await newTopic(admin, name, numPartitions);
  } finally {
    await admin.disconnect();
  }
}

/** Stops this process's thread, timers and sockets included, as SIGSTOP, a VM stall or a long GC would. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/*
 * A member whose process stops for longer than its session is dropped by the coordinator. On resuming it neither
 * holds its lease (so a bridge sends nothing for the partitions it had) nor goes on with the work it had begun: it
 * rejoins under a new member id, and that work is handed back even though the partition comes back to it (another
 * member may have had it meanwhile and gone on from the committed offset), then handled again from there.
 */
test('a member frozen past its session loses its lease and hands its work back when it rejoins', async () => {
  const topic = await createTopic('membership', 1);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [{ key: 'k', value: 'first' }] });
  await producer.disconnect();

  const lease = new MembershipLease();
  // Each answered heartbeat, with when it was sent: what keeps the lease between joins.
  const heartbeats: number[] = [];
  const heartbeat = lease.heartbeat.bind(lease);
  lease.heartbeat = (sentAt) => {
    heartbeats.push(sentAt);
    heartbeat(sentAt);
  };
  const handled: { offset: string; signal: AbortSignal }[] = [];
  const consumer = await runGroupConsumer(
    kafka,
    {
      groupId: `${topic}.group`,
      topics: [topic],
      maxInFlight: 10,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      membership: lease,
      // Never finishes by itself: the record stays under way until it is handed back.
      handle: (record, signal) =>
        new Promise<void>((resolve) => {
          handled.push({ offset: record.offset, signal });
          signal.addEventListener('abort', () => resolve());
        }),
    },
    createLogger('silent'),
  );
  consumers.push(consumer);
  await until(async () => (handled.length === 1 && lease.held() ? true : undefined), 30000, 20, 'the first record');
  // Renewed by heartbeats while the member lives: two answered, each sent after the one before, and held after them.
  await until(async () => (heartbeats.length >= 2 ? true : undefined), 30000, 20, 'two heartbeats');
  expect(heartbeats[1]).toBeGreaterThan(heartbeats[0]);
  expect(lease.held(heartbeats[1] + 1)).toBe(true);

  // Past the session with room to spare: a busy broker expires a member a little late.
  freeze(SESSION_TIMEOUT_MS + 5000);
  const heldOnResuming = lease.held();

  await until(async () => (handled.length === 2 ? true : undefined), 30000, 20, 'the record handled again');
  await until(async () => (lease.held() ? true : undefined), 30000, 20, 'the lease held again');
  expect(heldOnResuming).toBe(false);
  expect(handled[0].signal.aborted).toBe(true);
  expect(handled[0].signal.reason).toBeInstanceOf(HandBack);
  expect(handled.map((h) => h.offset)).toEqual(['0', '0']);
  expect(handled[1].signal.aborted).toBe(false);
}, 120000);

/*
 * A member joining the group makes the others rejoin (kafkajs's eager protocol): from the moment a member goes to
 * rejoin, its partitions may be given to another, so its lease is not held until its own join completes.
 */
test('a rebalance ends the lease until the member has joined again', async () => {
  const topic = await createTopic('membership-rebalance', 2);
  const lease = new MembershipLease();
  const rebalances: boolean[] = [];
  const lost = lease.lost.bind(lease);
  lease.lost = () => {
    lost();
    rebalances.push(lease.held());
  };
  const options = { groupId: `${topic}.group`, topics: [topic], maxInFlight: 10, handle: async () => undefined };
  consumers.push(await runGroupConsumer(kafka, { ...options, membership: lease }, createLogger('silent')));
  await until(async () => (lease.held() ? true : undefined), 30000, 20, 'the first join');
  consumers.push(await runGroupConsumer(kafka, options, createLogger('silent')));
  await until(async () => (rebalances.length > 0 ? true : undefined), 30000, 20, 'the rebalance seen');
  await until(async () => (lease.held() ? true : undefined), 30000, 20, 'the lease held after the join');
  expect(rebalances[0]).toBe(false);
}, 120000);
