import { problemType } from '../../src/problems/problem-types';
import { TASKS_VIEW, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import { TENANT_B_KEY } from '../support/api-keys';
import type { FakeView } from './fakes';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';
import { until } from '../support/until';

/*
 * The api's side of tasks over in-memory Kafka: what POST /tasks writes and answers, and how a tracking resource
 * follows the snapshot the runner writes (set here on the view, as the runner's record would be applied).
 */
let api: InMemoryApi;
let tasksView: FakeView<TaskSnapshot>;
beforeAll(async () => {
  api = await inMemoryApi();
  tasksView = api.kafka.viewOf(TASKS_VIEW) as FakeView<TaskSnapshot>;
});
afterAll(() => api.app.close());

const countdown = { type: 'countdown', input: { steps: 3, stepMs: 0 } };

async function submit(body: unknown = countdown, key?: string) {
  const res = await call(api.app, '/tasks', { body, key });
  expect(res.status).toBe(202);
  return res;
}

/** What the runner's snapshot write would make of the task. */
function runnerWrote(taskId: string, change: Partial<TaskSnapshot>): void {
  const now = tasksView.get(taskId);
  if (!now) throw new Error(`no task ${taskId}`);
  tasksView.set(taskId, { ...now, ...change, updatedAt: new Date().toISOString() });
}

const finished = (): Partial<TaskSnapshot> => ({
  status: 'succeeded',
  result: { steps: 3 },
  finishedAt: new Date().toISOString(),
});

describe('POST /tasks', () => {
  test('202, Location, and a tracking resource naming the topic, partition and offset of task.accepted', async () => {
    const before = api.kafka.publisher.published.length;
    const res = await submit();
    const { taskId } = res.body;
    expect(res.headers.location).toBe(`/tasks/${taskId}`);
    expect(res.headers['content-type']).toMatch(/^application\/hal\+json/);
    expect(res.body).toMatchObject({
      UUID: taskId,
      taskId,
      key: taskId,
      type: 'countdown',
      status: 'accepted',
      topic: api.kafka.topics.taskEvents,
      partition: expect.any(Number),
      offset: expect.any(Number),
      message: expect.stringContaining(api.kafka.topics.taskEvents),
      _links: {
        self: { href: `/tasks/${taskId}` },
        collection: { href: '/tasks' },
        events: { href: `/tasks/${taskId}/events` },
      },
    });
    expect(res.headers['retry-after']).toBe('1');
    // One transaction: the event, then the snapshot and the request; the 202 names the event's own position.
    const written = api.kafka.publisher.published.slice(before);
    expect(written.map((r) => r.topic)).toEqual([
      api.kafka.topics.taskEvents,
      api.kafka.topics.tasks,
      api.kafka.topics.taskRequests,
    ]);
    expect(written[0]).toMatchObject({ key: taskId, headers: { ce_type: 'task.accepted', ce_subject: taskId } });
    expect(JSON.parse(String(written[1].value))).toMatchObject({
      offset: res.body.offset,
      partition: res.body.partition,
    });
    expect(JSON.parse(String(written[2].value))).toMatchObject({
      type: 'countdown',
      input: countdown.input,
      tenant: 'tenant-a',
    });
  });

  test('an unknown type or invalid input is a 400 with pointers, and nothing is written', async () => {
    const before = api.kafka.publisher.published.length;
    const unknown = await call(api.app, '/tasks', { body: { type: 'juggle', input: {} } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/type']);
    const invalid = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 0, stepMs: 'slow' } } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors.map((e: { instance: string }) => e.instance).sort()).toEqual([
      '/input/stepMs',
      '/input/steps',
    ]);
    const extra = await call(api.app, '/tasks', { body: { ...countdown, priority: 'high' } });
    expect(extra.status).toBe(400);
    expect(api.kafka.publisher.published.length).toBe(before);
  });

  test('an input its type refuses beyond the schema (failAt past steps) is a 400 at its field', async () => {
    const before = api.kafka.publisher.published.length;
    const never = await call(api.app, '/tasks', {
      body: { type: 'countdown', input: { steps: 3, stepMs: 0, failAt: 4 } },
    });
    expect(never.status).toBe(400);
    expect(never.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/input/failAt']);
    expect(api.kafka.publisher.published.length).toBe(before);
    await submit({ type: 'countdown', input: { steps: 3, stepMs: 0, failAt: 3 } });
  });

  test('mode continuous without a callbackUrl is a 400 at /mode, and nothing is submitted', async () => {
    const before = api.kafka.publisher.published.length;
    const res = await call(api.app, '/tasks', { body: { ...countdown, mode: 'continuous' } });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('validation-failed'));
    expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/mode' })]);
    expect(api.kafka.publisher.published.length).toBe(before);
  });

  test('a callbackUrl creates the subscription in the same transaction, its secret shown once in the 202', async () => {
    const tolerant = await inMemoryApi({ allowPrivate: true });
    try {
      const res = await call(tolerant.app, '/tasks', {
        body: { ...countdown, callbackUrl: 'http://127.0.0.1:9/hook' },
      });
      expect(res.status).toBe(202);
      const subscription = res.body._embedded.subscription;
      expect(subscription).toMatchObject({
        mode: 'once',
        taskId: res.body.taskId,
        secret: expect.stringMatching(/^whsec_/),
      });
      expect(res.body._links.subscription).toEqual({ href: `/subscriptions/${subscription.UUID}` });
      const topics = tolerant.kafka.publisher.published.map((r) => r.topic);
      expect(topics).toContain(tolerant.kafka.topics.subscriptions);
      const later = await call(tolerant.app, `/tasks/${res.body.taskId}?embedded=subscription`);
      expect(later.body._embedded.subscription.UUID).toBe(subscription.UUID);
      expect(later.body._embedded.subscription.secret).toBeUndefined();
      // The cancel's 202 is a 2xx body like any other: it embeds what it is asked to.
      const cancel = await call(tolerant.app, `/tasks/${res.body.taskId}?embedded=subscription`, {
        method: 'PATCH',
        body: { status: 'cancelled' },
      });
      expect(cancel.status).toBe(202);
      expect(cancel.body._embedded.subscription.UUID).toBe(subscription.UUID);
    } finally {
      await tolerant.app.close();
    }
  });

  test('a callbackUrl to an internal address is 403 with an errors[] entry for /callbackUrl, and no task', async () => {
    const before = api.kafka.publisher.published.length;
    const res = await call(api.app, '/tasks', { body: { ...countdown, callbackUrl: 'http://10.0.0.7/hook' } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      type: problemType('subscription-rejected'),
      errors: [{ instance: '/callbackUrl' }],
    });
    expect(api.kafka.publisher.published.length).toBe(before);
  });

  test('Kafka not acknowledging is a 503 kafka-unavailable Problem with Retry-After', async () => {
    const unavailable = new (await import('../../src/kafka/types')).KafkaUnavailableError('no answer (fake)');
    const { publisher } = api.kafka;
    const publishStaged = jest.spyOn(publisher, 'publishStaged').mockRejectedValueOnce(unavailable);
    try {
      const res = await call(api.app, '/tasks', { body: countdown });
      expect(res.status).toBe(503);
      expect(res.body.type).toBe(problemType('kafka-unavailable'));
      expect(res.headers['retry-after']).toBe('5');
    } finally {
      publishStaged.mockRestore();
    }
  });
});

describe('tracking', () => {
  test('GET follows the snapshot: running with progress, then the result, with no Retry-After once final', async () => {
    const { taskId } = (await submit()).body;
    runnerWrote(taskId, { status: 'running', progress: { current: 1, total: 3 }, startedAt: new Date().toISOString() });
    const running = await call(api.app, `/tasks/${taskId}`);
    expect(running.body).toMatchObject({ status: 'running', progress: { current: 1, total: 3 } });
    expect(running.headers['retry-after']).toBe('1');
    runnerWrote(taskId, finished());
    const done = await call(api.app, `/tasks/${taskId}?fields=status,result`);
    expect(done.body).toEqual({ status: 'succeeded', result: { steps: 3 } });
    expect(done.headers['retry-after']).toBeUndefined();
  });

  test('Prefer: wait answers as soon as the view has the final snapshot, with Preference-Applied', async () => {
    const { taskId } = (await submit()).body;
    // The runner's final write lands once the request is waiting: only the view's change can answer it within 30 s.
    const awaitFinal = api.tasks.awaitFinal.bind(api.tasks);
    const waiting = jest.spyOn(api.tasks, 'awaitFinal').mockImplementationOnce((...args) => {
      const answer = awaitFinal(...args);
      runnerWrote(taskId, finished());
      return answer;
    });
    try {
      const started = Date.now();
      const res = await call(api.app, `/tasks/${taskId}`, { headers: { prefer: 'wait=30' } });
      expect(waiting).toHaveBeenCalledTimes(1);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('succeeded');
      expect(Date.now() - started).toBeLessThan(10000);
      expect(res.headers['preference-applied']).toBe('wait=30');
      expect(String(res.headers.vary)).toMatch(/Prefer/);
    } finally {
      waiting.mockRestore();
    }
  }, 15000);

  test('Prefer: wait on POST /tasks still answers 202, held until the task is final', async () => {
    const awaitFinal = api.tasks.awaitFinal.bind(api.tasks);
    const waiting = jest.spyOn(api.tasks, 'awaitFinal').mockImplementationOnce((taskId, ...rest) => {
      const answer = awaitFinal(taskId, ...rest);
      runnerWrote(taskId, finished());
      return answer;
    });
    try {
      const res = await call(api.app, '/tasks', { body: countdown, headers: { prefer: 'wait=30' } });
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ status: 'succeeded', result: { steps: 3 } });
      expect(res.headers['preference-applied']).toBe('wait=30');
      expect(res.headers['retry-after']).toBeUndefined();
    } finally {
      waiting.mockRestore();
    }
  }, 15000);

  test('a server that closes ends every Prefer: wait at once, answering with the task as it is then', async () => {
    const closing = await inMemoryApi();
    const { taskId } = (await call(closing.app, '/tasks', { body: countdown })).body;
    const wait = { prefer: 'wait=60' };
    const get = call(closing.app, `/tasks/${taskId}`, { headers: wait });
    const post = call(closing.app, '/tasks', { body: countdown, headers: wait });
    await until(async () => (closing.tasks.waiting === 2 ? true : undefined), 5000, 5);
    const started = Date.now();
    await closing.app.close();
    const [got, posted] = await Promise.all([get, post]);
    // Well inside the wait of 60 s: the close did not wait for the tasks, which never end here.
    expect(Date.now() - started).toBeLessThan(10000);
    expect(got.status).toBe(200);
    expect(got.body.status).toBe('accepted');
    expect(posted.status).toBe(202);
    expect(closing.tasks.waiting).toBe(0);
  });

  test('Prefer: wait=0 answers at once with the current state', async () => {
    const { taskId } = (await submit()).body;
    const res = await call(api.app, `/tasks/${taskId}`, { headers: { prefer: 'wait=0' } });
    expect(res.body.status).toBe('accepted');
    expect(res.headers['preference-applied']).toBe('wait=0');
  });

  test("GET /tasks lists only the caller's tasks, filtered by type and status", async () => {
    const mine = (await submit()).body.taskId;
    runnerWrote(mine, finished());
    const theirs = (await submit(countdown, TENANT_B_KEY)).body.taskId;
    const all = await call(api.app, '/tasks?limit=100');
    const ids = all.body._links.item.map((l: { href: string }) => l.href);
    expect(ids).toContain(`/tasks/${mine}`);
    expect(ids).not.toContain(`/tasks/${theirs}`);
    const succeeded = await call(api.app, '/tasks?status=succeeded&type=countdown&limit=100');
    expect(succeeded.body._embedded.tasks.every((t: TaskSnapshot) => t.status === 'succeeded')).toBe(true);
    expect(succeeded.body._links.self.href).toMatch(/^\/tasks\?type=countdown&status=succeeded&/);
    expect((await call(api.app, '/tasks?status=lost')).status).toBe(400);
  });

  test("another tenant's task is 404 for every method, as if it did not exist", async () => {
    const { taskId } = (await submit()).body;
    const asB = { key: TENANT_B_KEY };
    expect((await call(api.app, `/tasks/${taskId}`, asB)).status).toBe(404);
    const cancel = await call(api.app, `/tasks/${taskId}`, { ...asB, method: 'PATCH', body: { status: 'cancelled' } });
    expect(cancel.status).toBe(404);
    expect((await call(api.app, `/tasks/${taskId}`, { ...asB, method: 'DELETE' })).status).toBe(404);
    expect((await call(api.app, `/tasks/${taskId}`)).status).toBe(200);
  });
});

describe('retention in the representation', () => {
  test('a finished task says when it is forgotten (finishedAt + TASK_RETENTION_MS); one not finished does not', async () => {
    const { taskId } = (await submit()).body;
    expect((await call(api.app, `/tasks/${taskId}`)).body.expiresAt).toBeUndefined();
    const finishedAt = new Date(Date.now() - 60000).toISOString();
    runnerWrote(taskId, { ...finished(), finishedAt });
    const done = await call(api.app, `/tasks/${taskId}`);
    expect(done.body.finishedAt).toBe(finishedAt);
    expect(done.body.expiresAt).toBe(new Date(Date.parse(finishedAt) + 3600000).toISOString());
  });
});

describe('cancel and forget', () => {
  test('PATCH {"status":"cancelled"} is 202 and writes the cancel request under its own key', async () => {
    const { taskId } = (await submit()).body;
    const res = await call(api.app, `/tasks/${taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ status: 'accepted', cancelRequested: true });
    expect(api.tasks.cancelRequested(taskId)).toBe(true);
    // It names the task it was asked of, so a task made later under the same id is not taken for it.
    const written = api.kafka.publisher.published.filter((r) => r.key === `cancel/${taskId}`);
    expect(written.map((r) => JSON.parse(String(r.value)))).toEqual([
      expect.objectContaining({ cancel: true, taskId, taskCreatedAt: api.tasks.get(taskId)?.createdAt }),
    ]);
  });

  test('a task that ends on its own while its cancel is written keeps its outcome: 409, not a 202', async () => {
    const { taskId } = (await submit()).body;
    const write = api.tasks.requestCancel.bind(api.tasks);
    // The runner's final snapshot lands between the api's check and the cancel's write.
    const raced = jest.spyOn(api.tasks, 'requestCancel').mockImplementationOnce(async (id) => {
      runnerWrote(id, finished());
      await write(id);
    });
    try {
      const res = await call(api.app, `/tasks/${taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        type: problemType('task-already-finished'),
        detail: 'The task has already succeeded; it cannot be cancelled.',
      });
    } finally {
      raced.mockRestore();
    }
    const task = await call(api.app, `/tasks/${taskId}`);
    expect(task.body.status).toBe('succeeded');
  });

  test('any other change is 400; cancelling a finished task is 409', async () => {
    const { taskId } = (await submit()).body;
    const other = await call(api.app, `/tasks/${taskId}`, { method: 'PATCH', body: { status: 'succeeded' } });
    expect(other.status).toBe(400);
    expect(other.body.errors[0].instance).toBe('/status');
    runnerWrote(taskId, finished());
    const late = await call(api.app, `/tasks/${taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
    expect(late.status).toBe(409);
    expect(late.body.type).toBe(problemType('task-already-finished'));
    expect(late.body.detail).toBe('The task has already succeeded; it cannot be cancelled.');
    const cancelled = (await submit()).body.taskId;
    runnerWrote(cancelled, { status: 'cancelled', finishedAt: new Date().toISOString() });
    const again = await call(api.app, `/tasks/${cancelled}`, { method: 'PATCH', body: { status: 'cancelled' } });
    expect(again.status).toBe(409);
    expect(again.body.detail).toBe('The task has already been cancelled; it cannot be cancelled.');
  });

  test('DELETE forgets a finished task (204, then 404); a running one is 409', async () => {
    const { taskId } = (await submit()).body;
    const early = await call(api.app, `/tasks/${taskId}`, { method: 'DELETE' });
    expect(early.status).toBe(409);
    expect(early.body.type).toBe(problemType('task-not-finished'));
    runnerWrote(taskId, finished());
    expect((await call(api.app, `/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    expect((await call(api.app, `/tasks/${taskId}`)).status).toBe(404);
    expect((await call(api.app, `/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(404);
  });
});

describe('task types', () => {
  test('GET /task-types is public and lists every type with its input schema', async () => {
    const res = await call(api.app, '/task-types', { key: null });
    expect(res.status).toBe(200);
    const types = res.body._embedded['task-types'];
    expect(types.map((t: { name: string }) => t.name)).toEqual(['countdown', 'order-report']);
    expect(types[0]).toMatchObject({
      inputSchema: { type: 'object' },
      _links: { tasks: { href: '/tasks?type=countdown' } },
    });
  });

  test('GET /task-types/{name} is one type, or 404', async () => {
    expect((await call(api.app, '/task-types/countdown', { key: null })).body.name).toBe('countdown');
    const missing = await call(api.app, '/task-types/juggle', { key: null });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toMatch(/juggle/);
  });
});
