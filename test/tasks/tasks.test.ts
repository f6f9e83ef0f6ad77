import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { readTaskEvents } from '../support/event-reader';
import { http } from '../support/http';
import { startTestService, TENANT_B_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { committedRecords } from '../support/topic-contents';
import { until } from '../support/until';

/** Tasks end to end on the real broker: api and runner in one process (role all). */
let service: RunningService;
let base: string;

const prefix = uniquePrefix('tasks');

beforeAll(async () => {
  service = await startTestService(prefix, { role: 'all' });
  base = service.url;
});
afterAll(() => service.stop());

async function submit(input: Record<string, unknown>, type = 'countdown', key?: string) {
  const res = await http(base, '/tasks', { body: { type, input }, key });
  expect(res.status).toBe(202);
  return res;
}

const finalState = (taskId: string, key?: string) =>
  until(async () => {
    const res = await http(base, `/tasks/${taskId}`, { key });
    return ['succeeded', 'failed', 'cancelled'].includes(res.body.status) ? res.body : undefined;
  });

/**
 * The end offsets of the events and requests topics, once no task of this file is still running and the ends hold
 * still: a task is final in the view once its last transaction committed, and that transaction's markers reach the
 * partitions a moment after.
 */
async function topicEnds(): Promise<string> {
  await until(async () => {
    const list = await http(base, '/tasks?limit=100');
    return list.body._embedded.tasks.every((t: { status: string }) =>
      ['succeeded', 'failed', 'cancelled'].includes(t.status),
    )
      ? true
      : undefined;
  });
  const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const read = async () => {
    const ends = [];
    for (const topic of [service.kafka.topics.taskEvents, service.kafka.topics.taskRequests]) {
      ends.push(...(await admin.fetchTopicOffsets(topic)).map((o) => `${topic}/${o.partition}:${o.high}`));
    }
    return ends.sort().join(',');
  };
  try {
    let last = await read();
    return await until(async () => {
      await new Promise((r) => setTimeout(r, 300));
      const now = await read();
      const still = now === last;
      last = now;
      return still ? now : undefined;
    });
  } finally {
    await admin.disconnect();
  }
}

describe('submitting and tracking', () => {
  test('POST /tasks answers 202 with Location and a HAL tracking resource naming the topic, partition and offset', async () => {
    const res = await submit({ steps: 2, stepMs: 0 });
    const b = res.body;
    expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
    expect(res.headers.get('location')).toBe(`/tasks/${b.taskId}`);
    expect(b).toMatchObject({
      _links: { self: { href: `/tasks/${b.taskId}` } },
      UUID: b.taskId,
      topic: service.kafka.topics.taskEvents,
      status: 'accepted',
    });
    expect(typeof b.message).toBe('string');
    expect(b.partition).toBeGreaterThanOrEqual(0);
    expect(b.offset).toBeGreaterThanOrEqual(0);
  });

  test('a plain kafkajs consumer reading from the given partition and offset, by key, receives the whole sequence', async () => {
    const { body } = await submit({ steps: 3, stepMs: 10 });
    const events = await readTaskEvents(testBrokers(), {
      topic: body.topic,
      partition: body.partition,
      offset: body.offset,
      key: body.taskId,
    });
    expect(events[0].offset).toBe(String(body.offset));
    expect(events.map((e) => e.value.event)).toEqual([
      'task.accepted',
      'task.started',
      'task.progress',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
    expect(events.map((e) => e.value.data.current).filter(Boolean)).toEqual([1, 2, 3]);
    expect(events[5].value.data).toEqual({ result: { steps: 3 } });
    for (const e of events) {
      expect(e.headers).toMatchObject({
        ce_specversion: '1.0',
        ce_type: e.value.event,
        ce_source: '/hookstream',
        ce_subject: body.taskId,
      });
      expect(e.headers.ce_id).toBeTruthy();
      expect(Date.parse(e.headers.ce_time)).not.toBeNaN();
    }
  });

  test('GET /tasks/{id} shows status, progress, timestamps and the result', async () => {
    const { body } = await submit({ steps: 2, stepMs: 0 });
    const done = await finalState(body.taskId);
    expect(done).toMatchObject({
      status: 'succeeded',
      result: { steps: 2 },
      progress: { current: 2, total: 2 },
      attempt: 1,
    });
    for (const t of ['createdAt', 'startedAt', 'finishedAt']) expect(Date.parse(done[t])).not.toBeNaN();
  });

  test('fields and embedded work on the tracking resource', async () => {
    const { body } = await submit({ steps: 1, stepMs: 0 });
    const res = await http(base, `/tasks/${body.taskId}?fields=taskId,topic`);
    expect(res.body).toEqual({ taskId: body.taskId, topic: body.topic });
  });

  test('an unknown type or invalid input is a 400 with errors, and nothing is published', async () => {
    const before = await topicEnds();
    const unknown = await http(base, '/tasks', { body: { type: 'nope', input: {} } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/type']);
    const invalid = await http(base, '/tasks', { body: { type: 'countdown', input: { steps: 0, stepMs: 'x' } } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors.map((e: { instance: string }) => e.instance).sort()).toEqual([
      '/input/stepMs',
      '/input/steps',
    ]);
    expect(await topicEnds()).toBe(before);
  });

  test('a handler that throws ends in task.failed with a Problem and no stack trace', async () => {
    const { body } = await submit({ steps: 5, stepMs: 0, failAt: 3 });
    const done = await finalState(body.taskId);
    expect(done.status).toBe('failed');
    expect(done.problem).toMatchObject({
      type: 'https://hookstream.dev/problems/task-failed',
      title: 'Task failed',
      step: 3,
    });
    expect(JSON.stringify(done.problem)).not.toMatch(/\n\s+at |\.ts:\d+|\.js:\d+|stack/);
  });

  test('PATCH {"status":"cancelled"} answers 202; the handler is aborted and task.cancelled is published', async () => {
    const { body } = await submit({ steps: 100, stepMs: 100 });
    await until(async () => ((await http(base, `/tasks/${body.taskId}`)).body.status === 'running' ? true : undefined));
    const res = await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
    expect(res.status).toBe(202);
    const done = await finalState(body.taskId);
    expect(done.status).toBe('cancelled');
    expect(done.progress?.current ?? 0).toBeLessThan(100);
    const events = await readTaskEvents(testBrokers(), {
      topic: body.topic,
      partition: body.partition,
      offset: body.offset,
      key: body.taskId,
    });
    expect(events.at(-1)?.value.event).toBe('task.cancelled');
    expect(
      events.filter((e) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(e.value.event)),
    ).toHaveLength(1);
  });

  test('cancelling a finished task is 409; any other change is 400', async () => {
    const { body } = await submit({ steps: 1, stepMs: 0 });
    await finalState(body.taskId);
    expect((await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } })).status).toBe(
      409,
    );
    expect((await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'running' } })).status).toBe(
      400,
    );
  });

  test("a tenant never sees another tenant's tasks", async () => {
    const { body } = await submit({ steps: 1, stepMs: 0 });
    expect((await http(base, `/tasks/${body.taskId}`, { key: TENANT_B_KEY })).status).toBe(404);
    expect(
      (await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' }, key: TENANT_B_KEY }))
        .status,
    ).toBe(404);
    const list = await http(base, '/tasks?limit=100', { key: TENANT_B_KEY });
    expect(list.body._embedded.tasks.map((t: { taskId: string }) => t.taskId)).not.toContain(body.taskId);
  });

  test("GET /tasks lists the caller's tasks, filtered by type and status, paged", async () => {
    const mine = await submit({ steps: 1, stepMs: 0 }, 'countdown', TENANT_B_KEY);
    await finalState(mine.body.taskId, TENANT_B_KEY);
    await submit({}, 'order-report', TENANT_B_KEY);
    const byType = await http(base, '/tasks?type=countdown&status=succeeded', { key: TENANT_B_KEY });
    expect(byType.body._embedded.tasks.map((t: { taskId: string }) => t.taskId)).toContain(mine.body.taskId);
    expect(
      byType.body._embedded.tasks.every(
        (t: { type: string; status: string }) => t.type === 'countdown' && t.status === 'succeeded',
      ),
    ).toBe(true);
    const paged = await http(base, '/tasks?limit=1', { key: TENANT_B_KEY });
    expect(paged.body.count).toBe(1);
    expect(paged.body._links.next.href).toBe('/tasks?offset=1&limit=1');
    expect((await http(base, '/tasks?status=bogus')).status).toBe(400);
  });

  test('the order report reads the orders and returns totals by status', async () => {
    await http(base, '/orders', {
      body: {
        order: [
          { orderNumber: 1, itemCount: 2, status: 'open' },
          { orderNumber: 2, itemCount: 3, status: 'open' },
          { orderNumber: 3, itemCount: 5, status: 'paid' },
        ],
      },
    });
    const { body } = await submit({ statuses: ['open', 'paid'] }, 'order-report');
    const done = await finalState(body.taskId);
    expect(done.result).toEqual({
      orders: 3,
      items: 10,
      byStatus: { open: { orders: 2, items: 5 }, paid: { orders: 1, items: 5 } },
    });
  });
});

/** Until the runner has committed past a request: it has handled it, also if it passed it over. */
async function runnerPast(at: { partition: number; offset: string }): Promise<void> {
  const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  const topic = service.kafka.topics.taskRequests;
  try {
    await until(async () => {
      const [committed] = await admin.fetchOffsets({ groupId: `${prefix}task-runner`, topics: [topic] });
      const offset = committed.partitions.find((p) => p.partition === at.partition)?.offset ?? '-1';
      return BigInt(offset) > BigInt(at.offset) ? true : undefined;
    });
  } finally {
    await admin.disconnect();
  }
}

describe('submitting from Kafka', () => {
  async function produce(key: string | null, value: string, partition?: number) {
    const producer = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    const [sent] = await producer.send({
      topic: service.kafka.topics.taskRequests,
      messages: [{ key, value, partition }],
    });
    await producer.disconnect();
    return { partition: sent.partition, offset: sent.baseOffset as string };
  }

  const eventsOf = async (taskId: string) =>
    (await committedRecords(testBrokers(), service.kafka.topics.taskEvents))
      .filter((r) => r.key === taskId)
      .map((r) => JSON.parse(String(r.value)) as { event: string; data: Record<string, unknown> });

  test('a key of the form request-<partition>-<offset> never names a keyless request: each gets a task of its own', async () => {
    const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(service.kafka.topics.taskRequests).finally(() => admin.disconnect());
    const end = Number(ends.find((e) => e.partition === 1)?.high);
    // The keyed request lands at `end`, the keyless one right after it, where its id is the key the first one chose.
    const claimed = `request-1-${end + 1}`;
    await produce(
      claimed,
      JSON.stringify({ type: 'countdown', input: { steps: 3, stepMs: 0 }, tenant: 'tenant-a' }),
      1,
    );
    await produce(null, JSON.stringify({ type: 'countdown', input: { steps: 1, stepMs: 0 }, tenant: 'tenant-b' }), 1);

    expect(await finalState(`request-1-${end}`)).toMatchObject({ status: 'succeeded', result: { steps: 3 } });
    expect(await finalState(claimed, TENANT_B_KEY)).toMatchObject({ status: 'succeeded', result: { steps: 1 } });
    const events = (await eventsOf(claimed)).map((e) => e.event);
    expect(events.filter((e) => e === 'task.accepted')).toHaveLength(1);
    expect(events.filter((e) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(e))).toHaveLength(1);
  });

  test('a request with a field POST /tasks does not know (a callbackUrl) or a lone surrogate fails, saying so', async () => {
    const cases = {
      callbackUrl: [
        '{"type":"countdown","input":{"steps":1,"stepMs":0},"callbackUrl":"http://127.0.0.1:9/x"}',
        '/callbackUrl',
      ],
      surrogate: ['{"type":"order-report","input":{"statuses":["\\ud800"]}}', '/input/statuses/0'],
    };
    for (const [what, [value, instance]] of Object.entries(cases)) {
      const taskId = `kafka-strict-${what}-${Date.now()}`;
      await produce(taskId, value);
      const events = await readTaskEvents(testBrokers(), { topic: service.kafka.topics.taskEvents, key: taskId });
      expect(events.map((e) => e.value.event)).toEqual(['task.accepted', 'task.failed']);
      const failure = events[1].value.data.problem as { errors: { instance: string }[] };
      expect(failure.errors.map((e) => e.instance)).toContain(instance);
    }
  });

  test("a task request produced by a Kafka client runs under the client's own task id", async () => {
    const taskId = `kafka-client-${Date.now()}`;
    await produce(taskId, JSON.stringify({ type: 'countdown', input: { steps: 2, stepMs: 0 }, tenant: 'tenant-a' }));
    const done = await finalState(taskId);
    expect(done).toMatchObject({ taskId, status: 'succeeded', result: { steps: 2 } });
    const events = await readTaskEvents(testBrokers(), {
      topic: done.topic,
      partition: done.partition,
      offset: done.offset,
      key: taskId,
    });
    expect(events.map((e) => e.value.event)).toEqual([
      'task.accepted',
      'task.started',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
  });

  test('a key in UUID form names its task in lower case: its events are keyed so, and either case finds it', async () => {
    const taskId = randomUUID();
    const upper = taskId.toUpperCase();
    await produce(upper, JSON.stringify({ type: 'countdown', input: { steps: 1, stepMs: 0 }, tenant: 'tenant-a' }));
    expect(await finalState(taskId)).toMatchObject({ taskId, status: 'succeeded' });
    const found = await http(base, `/tasks/${upper}`);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ taskId, _links: { self: { href: `/tasks/${taskId}` } } });
    // The same UUID in the other case is this task's request again (passed over: the task is final), not a second.
    const again = await produce(
      taskId,
      JSON.stringify({ type: 'countdown', input: { steps: 2, stepMs: 0 }, tenant: 'tenant-b' }),
    );
    await runnerPast(again);
    await topicEnds();
    const records = await committedRecords(testBrokers(), service.kafka.topics.taskEvents);
    expect(records.filter((r) => String(r.key).toLowerCase() === taskId).map((r) => String(r.key))).toEqual(
      Array(4).fill(taskId),
    );
    expect((await http(base, `/tasks/${taskId}`, { key: TENANT_B_KEY })).status).toBe(404);
  });

  test('a request whose errors quote names too long for an event still fails as task-request-invalid', async () => {
    const taskId = `kafka-long-names-${Date.now()}`;
    const input: Record<string, unknown> = { steps: 1, stepMs: 0 };
    // Each unknown name is quoted twice (detail and instance): together more than Kafka takes in one record.
    for (const c of 'abc') input[c.repeat(250_000)] = 1;
    await produce(taskId, JSON.stringify({ type: 'countdown', input }));
    const events = await readTaskEvents(testBrokers(), { topic: service.kafka.topics.taskEvents, key: taskId });
    expect(events.map((e) => e.value.event)).toEqual(['task.accepted', 'task.failed']);
    const failure = events[1].value.data.problem as { type: string; errors: { instance: string }[] };
    expect(failure.type).toBe('https://hookstream.dev/problems/task-request-invalid');
    expect(failure.errors.map((e) => e.instance.slice(0, 10))).toEqual(['/input/aaa', '/input/bbb', '/input/ccc']);
    expect(failure.errors.every((e) => e.instance.length <= 1001)).toBe(true);
  });

  test('a bad task request ends in task.failed with a Problem, never in silence', async () => {
    const cases = {
      json: '{nope',
      type: '{"type":"nope","input":{}}',
      input: '{"type":"countdown","input":{"steps":-1}}',
    };
    for (const [what, value] of Object.entries(cases)) {
      const taskId = `kafka-bad-${what}-${Date.now()}`;
      await produce(taskId, value);
      const events = await readTaskEvents(testBrokers(), { topic: service.kafka.topics.taskEvents, key: taskId });
      expect(events.map((e) => e.value.event)).toEqual(['task.accepted', 'task.failed']);
      const failure = events[1].value.data.problem as { type: string; errors: unknown[] };
      expect(failure.type).toBe('https://hookstream.dev/problems/task-request-invalid');
      expect(failure.errors.length).toBeGreaterThan(0);
    }
  });
});
