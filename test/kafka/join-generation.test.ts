import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { newTopic } from '../support/new-topic';
import { testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * The group consumer hands back a member's work when it missed a generation (join-continuity.ts); it learns the
 * generation from kafkajs's GROUP_JOIN event, which tells it only with this project's patch. On the real broker:
 * each join says its generation, and a member that stays in the group sees them one by one.
 */
const kafka = new Kafka({ clientId: 'join-generation-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
let admin: Admin;
const consumers: Consumer[] = [];

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});
afterAll(async () => {
  await Promise.all(consumers.map((c) => c.disconnect()));
  await admin.disconnect();
});

async function member(groupId: string, topic: string, joins: number[]): Promise<Consumer> {
  const c = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 500 });
  consumers.push(c);
  c.on(c.events.GROUP_JOIN, ({ payload }) => joins.push((payload as { generationId?: number }).generationId ?? -1));
  await c.connect();
  await c.subscribe({ topic, fromBeginning: true });
  await c.run({ eachMessage: async () => undefined });
  return c;
}

test('GROUP_JOIN tells the generation joined; a member that stays sees the next one when another joins', async () => {
  const topic = await newTopic(admin, 'join-generation');
  const groupId = uniquePrefix('join-generation');
  const first: number[] = [];
  await member(groupId, topic, first);
  await until(async () => (first.length === 1 ? true : undefined), 30000, 50, 'the first join');
  expect(Number.isInteger(first[0])).toBe(true);
  expect(first[0]).toBeGreaterThan(0);
  const second: number[] = [];
  await member(groupId, topic, second);
  await until(async () => (first.length === 2 && second.length === 1 ? true : undefined), 30000, 50, 'the rebalance');
  expect(first).toEqual([first[0], first[0] + 1]);
  expect(second).toEqual([first[0] + 1]);
});
