import { Kafka, logLevel, type Admin } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { openSse } from '../support/sse-client';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/**
 * A task's events that Kafka deleted (the events topic's retention, here a records deletion) while its tracking
 * resource lives on: a page or stream from the cursor must say they are gone, never answer as if there were none.
 */
let service: RunningService;
let admin: Admin;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('deleted-events'), { role: 'all', env: { TOPIC_PARTITIONS: '1' } });
  admin = new Kafka({ clientId: 'deleted-events-test', brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
});
afterAll(async () => {
  await admin?.disconnect();
  await service?.stop();
});

interface Tracking {
  taskId: string;
  topic: string;
  partition: number;
  offset: number;
}

async function submit(input: Record<string, unknown>): Promise<Tracking> {
  const res = await http(service.url, '/tasks', { body: { type: 'countdown', input } });
  expect(res.status).toBe(202);
  return res.body as Tracking;
}

/** Deletes every record of the task's partition written so far; returns where the log starts now. */
async function deleteAllSoFar(task: Tracking): Promise<number> {
  const [ends] = await admin
    .fetchTopicOffsets(task.topic)
    .then((ps) => ps.filter((p) => p.partition === task.partition));
  await admin.deleteTopicRecords({ topic: task.topic, partitions: [{ partition: task.partition, offset: ends.high }] });
  return Number(ends.high);
}

async function status(taskId: string): Promise<string | undefined> {
  return (await http(service.url, `/tasks/${taskId}`)).body?.status as string | undefined;
}

test("a finished task whose events were deleted: the page and the stream answer 410 task-events-deleted, not 'complete' and empty", async () => {
  const task = await submit({ steps: 1, stepMs: 1 });
  await until(async () => ((await status(task.taskId)) === 'succeeded' ? true : undefined), 20000, 50, 'finished');
  const first = await deleteAllSoFar(task);
  expect(first).toBeGreaterThan(task.offset);

  const page = await http(service.url, `/tasks/${task.taskId}/events`);
  expect(page.status).toBe(410);
  expect(page.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(page.body).toMatchObject({
    type: 'https://hookstream.dev/problems/task-events-deleted',
    status: 410,
    resumeAfter: `${task.partition}:${first - 1}`,
  });

  const stream = await openSse(service.url, `/tasks/${task.taskId}/events`);
  await stream.ended;
  expect(stream.status).toBe(410);
  expect(JSON.parse(stream.text())).toMatchObject({ type: 'https://hookstream.dev/problems/task-events-deleted' });

  // Resuming after the gap, as the Problem says: nothing of the task is left, and the page says so.
  const rest = await http(service.url, `/tasks/${task.taskId}/events?after=${page.body.resumeAfter}`);
  expect(rest.status).toBe(200);
  expect(rest.body).toMatchObject({ count: 0, complete: true });
});

test('a running task whose first events were deleted: 410 from its start, and resumeAfter streams what is left to the final event', async () => {
  const task = await submit({ steps: 6, stepMs: 400 });
  await until(async () => ((await status(task.taskId)) === 'running' ? true : undefined), 20000, 50, 'running');
  const first = await deleteAllSoFar(task);

  const page = await http(service.url, `/tasks/${task.taskId}/events`);
  expect(page.status).toBe(410);
  const stream = await openSse(service.url, `/tasks/${task.taskId}/events`);
  await stream.ended;
  expect(stream.status).toBe(410);
  expect(JSON.parse(stream.text())).toMatchObject({ resumeAfter: page.body.resumeAfter });

  const rest = await openSse(service.url, `/tasks/${task.taskId}/events`, { 'last-event-id': page.body.resumeAfter });
  expect(rest.status).toBe(200);
  await rest.ended;
  const ids = rest.events.map((e) => Number(e.id?.split(':')[1]));
  expect(ids.every((o) => o >= first)).toBe(true);
  expect(rest.events.map((e) => e.event)).not.toContain('task.accepted');
  expect(rest.events.at(-1)?.event).toBe('task.succeeded');
});
