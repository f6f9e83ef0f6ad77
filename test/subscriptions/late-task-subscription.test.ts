import { Kafka, logLevel } from 'kafkajs';
import { problemType } from '../../src/problems/problem-types';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * A subscription to a task over POST /subscriptions, made while the task runs, while it finishes, or after it
 * finished: on the real broker, with the bridge, it gets the task's events from the first one (continuous) or its
 * final outcome (once), exactly as a subscription made with the task would. Before, one made after the bridge had
 * read the task's final event got nothing, and its 201 said so.
 */
let service: RunningService;
let base: string;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('late-sub'), { role: 'all', env: { CALLBACK_TIMEOUT_MS: '5000' } });
  base = service.url;
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver?.stop();
  await service?.stop();
});

const submit = async (input: Record<string, unknown>) => {
  const res = await http(base, '/tasks', { body: { type: 'countdown', input } });
  expect(res.status).toBe(202);
  return res.body.taskId as string;
};
const subscribe = async (taskId: string, mode: 'once' | 'continuous') => {
  const res = await http(base, '/subscriptions', { body: { callbackUrl: `${receiver.url}/${taskId}`, mode, taskId } });
  expect(res.status).toBe(201);
  return res.body.UUID as string;
};
const finished = (taskId: string) =>
  until(async () => {
    const { body } = await http(base, `/tasks/${taskId}`);
    return ['succeeded', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
  }, 30000);
const callbacksOf = (subscription: string) =>
  receiver.received.filter((r) => r.json.UUID === subscription).map((r) => r.json.event);
/** A once subscription is cancelled by the bridge after its one callback; none starts after that (the lease). */
// The attempt and the end are written in that order, but the api reads the delivery history and the subscriptions
// from two topics: its view can show the end a moment before the attempt (README "Callbacks").
const deliveredOnce = (subscription: string) =>
  until(async () => {
    const { body } = await http(base, `/subscriptions/${subscription}`);
    return body.status === 'cancelled' && body.counts.attempts > 0 ? body : undefined;
  }, 30000);

test('subscribed after the task finished: once gets the final outcome; continuous every event, in order', async () => {
  const taskId = await submit({ steps: 3, stepMs: 0 });
  await finished(taskId);
  const once = await subscribe(taskId, 'once');
  const all = await subscribe(taskId, 'continuous');
  const ended = await deliveredOnce(once);
  expect(ended).toMatchObject({ cancelReason: 'delivered-once', counts: { delivered: 1 } });
  expect(callbacksOf(once)).toEqual(['task.succeeded']);
  const kinds = ['task.accepted', 'task.started', 'task.progress', 'task.progress', 'task.progress', 'task.succeeded'];
  await until(async () => (callbacksOf(all).length >= kinds.length ? true : undefined), 30000);
  expect(callbacksOf(all)).toEqual(kinds);
  const outcome = receiver.received.find((r) => r.json.UUID === once)!;
  expect(outcome.json).toMatchObject({ taskId, data: { result: { steps: 3 } } });
}, 60000);

test('subscribed right after each 202, as 40 short tasks finish: each once subscription gets its outcome once', async () => {
  const TASKS = 40;
  const subscriptions: string[] = [];
  // Tasks of 0-30 ms, subscribed 0-400 ms after their 202: some end before the subscription is written (and the
  // bridge has read their final event), some while it is written, some after.
  await Promise.all(
    Array.from({ length: TASKS }, async (_, n) => {
      const taskId = await submit({ steps: 1, stepMs: n % 31 });
      await new Promise((resolve) => setTimeout(resolve, (n * 37) % 400));
      subscriptions.push(await subscribe(taskId, 'once'));
    }),
  );
  const ended = await Promise.all(subscriptions.map(deliveredOnce));
  expect(ended.map((s) => s.cancelReason)).toEqual(subscriptions.map(() => 'delivered-once'));
  const counts = subscriptions.map((s) => callbacksOf(s));
  expect(counts).toEqual(subscriptions.map(() => ['task.succeeded']));
}, 120000);

test("a task whose first events Kafka deleted (retention) is refused with 410; a later task's are there", async () => {
  // Last in this file: the deleted records are the task's own, and the earlier tests' tasks have all finished.
  const taskId = await submit({ steps: 2, stepMs: 0 });
  const task = await finished(taskId);
  const admin = new Kafka({
    clientId: 'late-sub-retention',
    brokers: testBrokers(),
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    // Its first event (task.accepted) only, as retention deletes a log from its start.
    const [topic, partition] = [task.topic as string, task.partition as number];
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition, offset: String(Number(task.offset) + 1) }] });
  } finally {
    await admin.disconnect();
  }
  const res = await http(base, '/subscriptions', {
    body: { callbackUrl: `${receiver.url}/${taskId}`, mode: 'once', taskId },
  });
  expect(res.status).toBe(410);
  expect(res.body).toMatchObject({ type: problemType('task-events-deleted'), status: 410 });
  const later = await submit({ steps: 1, stepMs: 0 });
  await finished(later);
  expect(await deliveredOnce(await subscribe(later, 'once'))).toMatchObject({ cancelReason: 'delivered-once' });
}, 60000);
