import { createServer, type ServerResponse } from 'node:http';
import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { http } from '../support/http';
import { listenOnLoopback } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * "No callback starts after the cancel's 202" covers events queued before the cancel, too. The bridge is its own
 * process, so its view of the subscriptions is not the api's: it learns of the cancellation only through Kafka,
 * within its lease (src/subscriptions/subscription-lease.ts). The receiver holds the fifth callback open while the
 * cancel is answered, so the lane's next decision is after the 202; the test then waits until the bridge has
 * committed every event (each one decided), and counts.
 */
const EVENTS = 30;
const HELD = 5;

let api: RunningService | undefined;
let bridge: ChildService | undefined;
const held: ServerResponse[] = [];
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received += 1;
    if (received === HELD) held.push(res);
    else res.writeHead(204).end();
  });
});
let received = 0;

/** partition → offset of its last order.created record, once `count` of them were read */
async function lastOffsets(topic: string, count: number): Promise<Map<number, bigint>> {
  const consumer = new Kafka({
    clientId: 'cancel-backlog-reader',
    brokers: testBrokers(),
    logLevel: logLevel.NOTHING,
  }).consumer({ groupId: `${topic}.reader.${Date.now()}` });
  const last = new Map<number, bigint>();
  let seen = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          if (!message.value?.toString().includes('"order.created"')) return;
          last.set(partition, BigInt(message.offset));
          if ((seen += 1) === count) resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return last;
}

afterAll(async () => {
  for (const res of held) if (!res.headersSent) res.writeHead(204).end();
  await bridge?.kill('SIGKILL');
  await api?.stop();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}, 30000);

test('a cancel answered while a callback is in flight: none of the queued events is sent after the 202', async () => {
  const prefix = uniquePrefix('cancel-backlog');
  api = await startTestService(prefix, { role: 'api' });
  bridge = await startChildService('bridge', prefix);
  const url = await listenOnLoopback(server);
  const sub = await http(api.url, '/subscriptions', {
    body: { callbackUrl: `${url}/hook`, mode: 'continuous', events: ['order.created'] },
  });
  expect(sub.status).toBe(201);
  const orders = Array.from({ length: EVENTS }, (_, n) => ({ orderNumber: n, itemCount: 1, status: 'open' }));
  expect((await http(api.url, '/orders', { body: { order: orders } })).status).toBe(201);

  await until(async () => (held.length === 1 ? true : undefined));
  expect((await http(api.url, `/subscriptions/${sub.body.UUID}`, { method: 'PUT' })).status).toBe(202);
  held[0].writeHead(204).end();

  // Every event decided: the bridge's group has committed past the last record of each partition.
  const topic = api.kafka.topics.domainEvents;
  const last = await lastOffsets(topic, EVENTS);
  const kafka = new Kafka({ clientId: 'cancel-backlog-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await until(
      async () => {
        const [committed] = await admin.fetchOffsets({ groupId: `${prefix}callback-bridge`, topics: [topic] });
        const at = new Map(committed.partitions.map((p) => [p.partition, BigInt(p.offset)]));
        return [...last].every(([partition, offset]) => (at.get(partition) ?? -1n) > offset) ? true : undefined;
      },
      30000,
      100,
    );
  } finally {
    await admin.disconnect();
  }
  expect(received).toBe(HELD);
}, 90000);
