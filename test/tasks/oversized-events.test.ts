import { Kafka, logLevel } from 'kafkajs';
import { partitionOfKey } from '../../src/kafka/murmur2';
import { exampleTaskTypes } from '../../src/examples';
import type { RunningService } from '../../src/service';
import type { TaskType } from '../../src/tasks/task-type';
import { http } from '../support/http';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { committedRecords } from '../support/topic-contents';
import { until } from '../support/until';

/*
 * What would be larger than Kafka takes in one record (about 1 MB) never gets into a loop of retries: a request,
 * an input, a progress message or a result that big ends its task in one task.failed saying why, and the other
 * tasks of the partition run on undisturbed (each retry of a poisoned one used to restart them all).
 */
const MB = 1_000_000;
const types = [
  {
    name: 'big-result',
    description: 'returns more than Kafka takes',
    inputSchema: { type: 'object' },
    run: async () => 'r'.repeat(1.1 * MB),
  },
  {
    name: 'big-progress',
    description: 'reports progress with a message larger than Kafka takes',
    inputSchema: { type: 'object' },
    run: async ({ progress }: { progress: (c: number, t: number, m?: string) => void }) => {
      progress(1, 2, 'first, small');
      progress(2, 2, 'p'.repeat(1.1 * MB));
      return 'never';
    },
  },
  {
    name: 'echo',
    description: 'returns its input',
    inputSchema: { type: 'object' },
    run: async (c: { input: unknown }) => c.input,
  },
] as unknown as TaskType[];

let service: RunningService;
beforeAll(async () => {
  service = await startTestService(uniquePrefix('oversized'), {
    role: 'all',
    registers: { taskTypes: [...exampleTaskTypes, ...types] },
  });
});
afterAll(() => service?.stop());

const finalOf = (taskId: string) =>
  until(async () => {
    const res = await http(service.url, `/tasks/${taskId}`);
    return ['succeeded', 'failed', 'cancelled'].includes(res.body.status) ? res.body : undefined;
  }, 60000);

async function eventsOf(taskId: string): Promise<{ event: string; data: Record<string, unknown> }[]> {
  const records = await committedRecords(testBrokers(), service.kafka.topics.taskEvents);
  return records.filter((r) => r.key === taskId).map((r) => JSON.parse(r.value as string));
}

test('a result or a progress message too large for Kafka fails the task once, saying so', async () => {
  for (const type of ['big-result', 'big-progress']) {
    const res = await http(service.url, '/tasks', { body: { type, input: {} } });
    expect(res.status).toBe(202);
    const done = await finalOf(res.body.taskId);
    expect([type, done.status, done.problem.detail]).toEqual([type, 'failed', expect.stringMatching(/more than/)]);
    expect(done.attempt).toBe(1);
    const kinds = (await eventsOf(res.body.taskId)).map((e) => e.event);
    expect(kinds.filter((k) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(k))).toEqual([
      'task.failed',
    ]);
    expect(kinds.at(-1)).toBe('task.failed');
  }
});

test('POST /tasks with an input too large for one Kafka record is 413, and nothing is written', async () => {
  const res = await http(service.url, '/tasks', { body: { type: 'echo', input: { note: 'x'.repeat(1_040_000) } } });
  expect(res.status).toBe(413);
  expect(res.body.type).toBe('https://hookstream.dev/problems/payload-too-large');
  // Concurrent inputs that each fit are accepted, though together they are over what one batch may hold.
  const big = Array.from({ length: 4 }, (_, i) =>
    http(service.url, '/tasks', { body: { type: 'echo', input: { note: `${i}`.repeat(400_000) } } }),
  );
  expect((await Promise.all(big)).map((r) => r.status)).toEqual([202, 202, 202, 202]);
});

test('poisoned requests from Kafka each end in one task.failed; a task beside them on the partition runs once', async () => {
  const producer = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).producer();
  await producer.connect();
  const stamp = Date.now();
  const ids = {
    type: `poison-type-${stamp}`,
    errors: `poison-errors-${stamp}`,
    input: `poison-input-${stamp}`,
    tenant: `poison-tenant-${stamp}`,
    beside: `beside-${stamp}`,
  };
  const requests = [
    [ids.beside, { type: 'countdown', input: { steps: 20, stepMs: 100 }, tenant: 'tenant-a' }],
    [ids.type, { type: 't'.repeat(600_000), input: {}, tenant: 'tenant-a' }],
    [ids.errors, { type: 'order-report', input: { statuses: Array(20_000).fill(1) }, tenant: 'tenant-a' }],
    [ids.input, { type: 'echo', input: { note: 'i'.repeat(1_000_200) }, tenant: 'tenant-a' }],
    [ids.tenant, { type: 'countdown', input: { steps: 1, stepMs: 0 }, tenant: 'acme corp' }],
  ] as const;
  try {
    // One send each: together they are over what the broker takes in one batch, as the poison ones are alone. The
    // largest lands off its key's partition, where it cannot be moved as it is (a stand-in is, and refused there).
    const offHome = (partitionOfKey(ids.input, 3) + 1) % 3;
    for (const [key, value] of requests) {
      const message = { key, value: JSON.stringify(value), partition: key === ids.input ? offHome : 0 };
      await producer.send({ topic: service.kafka.topics.taskRequests, messages: [message] });
    }
  } finally {
    await producer.disconnect();
  }
  const beside = await finalOf(ids.beside);
  expect([beside.status, beside.attempt]).toEqual(['succeeded', 1]);
  for (const [what, taskId] of Object.entries(ids)) {
    if (what === 'beside') continue;
    const events = await until(async () => {
      const found = await eventsOf(taskId);
      return found.some((e) => e.event === 'task.failed') ? found : undefined;
    }, 60000);
    expect([what, events.map((e) => e.event)]).toEqual([what, ['task.accepted', 'task.failed']]);
    const problem = events[1].data.problem as { type: string; errors: { instance: string }[] };
    expect(problem.type).toBe('https://hookstream.dev/problems/task-request-invalid');
    expect(problem.errors.length).toBeLessThanOrEqual(100);
    const where = { type: '/type', errors: '/input/statuses/0', input: '/input', tenant: '/tenant' }[what];
    expect(problem.errors.map((e) => e.instance)).toContain(where);
  }
});
