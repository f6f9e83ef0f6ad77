import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, TENANT_B_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { committedRecords, latestValue } from '../support/topic-contents';
import { until } from '../support/until';

/**
 * Finished tasks are forgotten after TASK_RETENTION_MS (tombstoned, then 404),
 * and DELETE forgets one at once. `short` (3 s window) runs as two api
 * instances, both sweeping; `kept` has the default week.
 */
const RETENTION_MS = 3000;
let short: RunningService;
let shortApi: RunningService;
let kept: RunningService;

beforeAll(async () => {
  const prefix = uniquePrefix('retention');
  const env = { TASK_RETENTION_MS: String(RETENTION_MS) };
  short = await startTestService(prefix, { role: 'all', env });
  shortApi = await startTestService(prefix, { role: 'api', env });
  kept = await startTestService(uniquePrefix('forget'), { role: 'all' });
});
afterAll(async () => {
  await shortApi?.stop();
  await short?.stop();
  await kept?.stop();
});

const kafka = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING });

const FINAL = ['succeeded', 'failed', 'cancelled'];

async function submit(base: string, input: Record<string, unknown>) {
  const res = await http(base, '/tasks', { body: { type: 'countdown', input } });
  expect(res.status).toBe(202);
  return res.body as { taskId: string };
}

test('a finished task is kept for TASK_RETENTION_MS, then answers 404 everywhere and is tombstoned', async () => {
  const { taskId } = await submit(short.url, { steps: 1, stepMs: 0 });
  const done = await until(async () => {
    const res = await http(short.url, `/tasks/${taskId}`);
    return res.body.status === 'succeeded' ? res.body : undefined;
  });
  const finishedAt = Date.parse(done.finishedAt);
  const status = async (base: string) => (await http(base, `/tasks/${taskId}`)).status;
  const goneAt = await until(async () => ((await status(short.url)) === 404 ? Date.now() : undefined), 20000);
  expect(goneAt - finishedAt).toBeGreaterThanOrEqual(RETENTION_MS - 50);
  await until(async () => ((await http(shortApi.url, `/tasks/${taskId}`)).status === 404 ? true : undefined));
  const list = await http(short.url, '/tasks?limit=100');
  expect(list.body._embedded.tasks.map((t: { taskId: string }) => t.taskId)).not.toContain(taskId);
  // Within a bounded delay (a sweep every 0.5 s here) the snapshot is tombstoned, so compaction can drop it.
  await until(
    async () => ((await latestValue(testBrokers(), short.kafka.topics.tasks, taskId)) === null ? true : undefined),
    20000,
  );
});

test('a task running longer than the window is never forgotten while it runs', async () => {
  const { taskId } = await submit(short.url, { steps: 16, stepMs: 500 });
  // The other instance answers for the task once its own view has read it (read-your-writes is per instance).
  const seen = async () => ((await http(shortApi.url, `/tasks/${taskId}`)).status === 200 ? true : undefined);
  await until(seen, 10000, 20);
  // Both instances are asked until one has seen the end (a final status, or already the 404 after it): a view may
  // read the finish seconds late on a busy machine, together with the tombstone the sweep writes 3 s after it.
  // Each answer is judged by when it was asked, against the end as the topic has it.
  const answers: { askedAt: number; status: string | number }[] = [];
  await until(
    async () => {
      for (const base of [shortApi.url, short.url]) {
        const askedAt = Date.now();
        const res = await http(base, `/tasks/${taskId}`);
        answers.push({ askedAt, status: res.status === 200 ? res.body.status : res.status });
      }
      return answers.slice(-2).some((a) => a.status === 404 || FINAL.includes(String(a.status))) ? true : undefined;
    },
    60000,
    100,
  );
  const events = (await committedRecords(testBrokers(), short.kafka.topics.taskEvents))
    .filter((r) => r.key === taskId)
    .map((r) => JSON.parse(r.value as string) as { event: string; time: string });
  const accepted = events.find((e) => e.event === 'task.accepted');
  const final = events.find((e) => FINAL.includes(e.event.replace('task.', '')));
  expect(final?.event).toBe('task.succeeded');
  const finishedAt = Date.parse(final?.time as string);
  expect(finishedAt - Date.parse(accepted?.time as string)).toBeGreaterThan(RETENTION_MS);
  // Not one 404 while it ran, nor within the window after: 404 only once the retention has passed.
  const early = answers.filter((a) => a.status === 404 && a.askedAt < finishedAt + RETENTION_MS - 50);
  expect(early).toEqual([]);
  expect(answers.filter((a) => a.status === 'running').length).toBeGreaterThan(0);
});

test("a task's callback subscription and its delivery attempts are forgotten a window after it ended", async () => {
  const receiver = await new Receiver().start();
  try {
    const res = await http(short.url, '/tasks', {
      body: { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: `${receiver.url}/hook` },
    });
    expect(res.status).toBe(202);
    const subscriptionId = res.body._embedded.subscription.UUID as string;
    const [callback] = await receiver.waitFor(1);
    const attemptsOf = `${subscriptionId}/${callback.headers['webhook-id']}/`;
    // A once subscription ends with its delivery, and then says when it is forgotten. Not gated on counts.delivered:
    // short's view of the history may read the attempt seconds late, and 3 s after the end the subscription is gone.
    const ended = await until(async () => {
      const s = await http(short.url, `/subscriptions/${subscriptionId}`);
      return s.body.status === 'cancelled' ? s.body : undefined;
    });
    expect(ended.cancelReason).toBe('delivered-once');
    expect(Date.parse(ended.expiresAt)).toBe(Date.parse(ended.updatedAt) + RETENTION_MS);
    await until(async () => (await http(short.url, `/subscriptions/${subscriptionId}`)).status === 404 || undefined);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(ended.expiresAt));
    await until(async () => (await http(shortApi.url, `/subscriptions/${subscriptionId}`)).status === 404 || undefined);
    const listed = await http(short.url, '/subscriptions?limit=100');
    expect(listed.body._embedded.subscriptions.map((s: { UUID: string }) => s.UUID)).not.toContain(subscriptionId);
    // Tombstoned within a sweep: the subscription so compaction drops it, the attempt so every view lets it go.
    const tombstoned = async (topic: string, key: string) =>
      (await latestValue(testBrokers(), topic, key)) === null || undefined;
    await until(() => tombstoned(short.kafka.topics.subscriptions, subscriptionId), 20000);
    const [attemptKey] = (await committedRecords(testBrokers(), short.kafka.topics.deliveries))
      .map((r) => r.key)
      .filter((k) => k.startsWith(attemptsOf));
    expect(attemptKey).toMatch(/\/1$/);
    await until(() => tombstoned(short.kafka.topics.deliveries, attemptKey), 20000);
  } finally {
    await receiver.stop();
  }
});

test('DELETE forgets a finished task: 204, then 404, and a repeat DELETE is 404', async () => {
  const { taskId } = await submit(kept.url, { steps: 1, stepMs: 0 });
  await until(async () => ((await http(kept.url, `/tasks/${taskId}`)).body.status === 'succeeded' ? true : undefined));
  expect((await http(kept.url, `/tasks/${taskId}`, { method: 'DELETE', key: TENANT_B_KEY })).status).toBe(404);
  const deleted = await http(kept.url, `/tasks/${taskId}`, { method: 'DELETE' });
  expect(deleted.status).toBe(204);
  expect((await http(kept.url, `/tasks/${taskId}`)).status).toBe(404);
  const again = await http(kept.url, `/tasks/${taskId}`, { method: 'DELETE' });
  expect(again.status).toBe(404);
  expect(again.body.type).toBe('https://hookstream.dev/problems/not-found');
  expect(await latestValue(testBrokers(), kept.kafka.topics.tasks, taskId)).toBeNull();
});

test('overlapping DELETEs of one finished task: one 204, every other a 404 (one instance)', async () => {
  const { taskId } = await submit(kept.url, { steps: 1, stepMs: 0 });
  await until(async () => ((await http(kept.url, `/tasks/${taskId}`)).body.status === 'succeeded' ? true : undefined));
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => http(kept.url, `/tasks/${taskId}`, { method: 'DELETE' })),
  );
  expect(answers.map((a) => a.status).sort()).toEqual([204, 404, 404, 404, 404]);
});

test('DELETE of a task that is not finished is a 409 Problem; it keeps running', async () => {
  const { taskId } = await submit(kept.url, { steps: 100, stepMs: 100 });
  const res = await http(kept.url, `/tasks/${taskId}`, { method: 'DELETE' });
  expect(res.status).toBe(409);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body.type).toBe('https://hookstream.dev/problems/task-not-finished');
  expect((await http(kept.url, `/tasks/${taskId}`)).status).toBe(200);
  await http(kept.url, `/tasks/${taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test('the tasks, subscriptions and idempotency-keys topics are created so compaction drops what was forgotten', async () => {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [kept.kafka.topics.tasks, kept.kafka.topics.subscriptions, kept.kafka.topics.idempotencyKeys].map(
        (name) => ({
          type: ConfigResourceTypes.TOPIC,
          name,
        }),
      ),
    });
    for (const r of resources) {
      const config = Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue]));
      expect(config).toMatchObject({
        'cleanup.policy': 'compact',
        'segment.ms': '3600000',
        'delete.retention.ms': '86400000',
        'max.compaction.lag.ms': '86400000',
      });
    }
  } finally {
    await admin.disconnect();
  }
});
