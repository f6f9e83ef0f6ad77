import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * One trace id from the HTTP request through the Kafka records (the task request, every task event) to the
 * callback POSTs, across the api, the runner and the bridge, on the real broker.
 */
let service: RunningService;
const receivers: Receiver[] = [];
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const traceIdOf = (traceparent: string | undefined) =>
  /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1];

beforeAll(async () => {
  service = await startTestService(uniquePrefix('trace'), { role: 'all' });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await service.stop();
});

/** traceparent headers of the records with this key, once `count` of them were read */
async function recordTraces(topic: string, key: string, count: number): Promise<(string | undefined)[]> {
  const kafka = new Kafka({ clientId: 'trace-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: uniquePrefix('trace-reader') });
  const found: (string | undefined)[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.key?.toString() === key) found.push(message.headers?.traceparent?.toString());
      },
    });
    await until(async () => (found.length >= count ? true : undefined), 20000);
  } finally {
    await consumer.disconnect();
  }
  return found;
}

test('a traceparent on POST /tasks reaches the task request, every task event and every callback', async () => {
  const receiver = await new Receiver(() => ({ status: 204 })).start();
  receivers.push(receiver);
  const res = await http(service.url, '/tasks', {
    headers: { traceparent: PARENT },
    body: { type: 'countdown', input: { steps: 2, stepMs: 0 }, callbackUrl: `${receiver.url}/cb`, mode: 'continuous' },
  });
  expect(res.status).toBe(202);
  expect(traceIdOf(res.headers.get('traceparent') ?? undefined)).toBe(TRACE_ID);
  const taskId = res.body.taskId as string;

  // accepted, started, 2 × progress, succeeded
  const callbacks = await receiver.waitFor(5);
  expect(callbacks.map((c) => c.json.event)).toEqual([
    'task.accepted', 'task.started', 'task.progress', 'task.progress', 'task.succeeded',
  ]);
  for (const c of callbacks) expect(traceIdOf(c.headers.traceparent as string)).toBe(TRACE_ID);
  const requests = await recordTraces(service.kafka.topics.taskRequests, taskId, 1);
  const events = await recordTraces(service.kafka.topics.taskEvents, taskId, 5);
  for (const t of [...requests, ...events]) expect(traceIdOf(t)).toBe(TRACE_ID);
  // Each hop is a span of its own: no two records share a span id.
  expect(new Set([...requests, ...events]).size).toBe(requests.length + events.length);
});

test('an invalid traceparent starts a new trace instead of failing the request', async () => {
  const res = await http(service.url, '/tasks', {
    headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
    body: { type: 'countdown', input: { steps: 1, stepMs: 0 } },
  });
  expect(res.status).toBe(202);
  const traceId = traceIdOf(res.headers.get('traceparent') ?? undefined);
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(traceId).not.toBe('0'.repeat(32));
  const [request] = await recordTraces(service.kafka.topics.taskRequests, res.body.taskId, 1);
  expect(traceIdOf(request)).toBe(traceId);
});
