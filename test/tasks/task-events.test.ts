import type { RunningService } from '../../src/service';
import { readTaskEvents, type ReadEvent } from '../support/event-reader';
import { http } from '../support/http';
import { openSse, type SseEvent } from '../support/sse-client';
import { startTestService, TENANT_B_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/**
 * GET /tasks/{id}/events: the task's events as Server-Sent Events (and as HAL
 * JSON), read straight from the partition. Two api instances share the
 * topics: `a` runs everything, `b` is an api only.
 */
let a: RunningService;
let b: RunningService;

beforeAll(async () => {
  const prefix = uniquePrefix('events');
  const env = { EVENTS_HEARTBEAT_MS: '300' };
  a = await startTestService(prefix, { role: 'all', env });
  b = await startTestService(prefix, { role: 'api', env });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

/** `onlyOnA`: every request about the task goes to instance a, which has it from the 202 on (its own write). */
async function submit(input: Record<string, unknown>, { onlyOnA = false } = {}) {
  const res = await http(a.url, '/tasks', { body: { type: 'countdown', input } });
  expect(res.status).toBe(202);
  const task = res.body as { taskId: string; topic: string; partition: number; offset: number };
  if (onlyOnA) return task;
  // The streams below are opened on the other instance, which has the task once its view read it (its consumer
  // lag, seconds on a busy machine): before that it rightly answers 404.
  const known = async () => ((await http(b.url, `/tasks/${task.taskId}`)).status === 200 ? true : undefined);
  await until(known, 20000, 50, 'instance b has the task');
  return task;
}

const fromKafka = (t: { taskId: string; topic: string; partition: number; offset: number }) =>
  readTaskEvents(testBrokers(), { topic: t.topic, partition: t.partition, offset: t.offset, key: t.taskId });

/** What an SSE event must be for the Kafka record it stands for. */
const asSse = (e: ReadEvent): SseEvent => ({
  id: `${e.partition}:${e.offset}`,
  event: e.value.event,
  data: JSON.stringify(e.value),
});

test('the stream carries every event in order: id = Kafka coordinate, event = kind, data = the record value; it ends after the final event', async () => {
  const task = await submit({ steps: 3, stepMs: 150 });
  const sse = await openSse(a.url, `/tasks/${task.taskId}/events`);
  expect(sse.status).toBe(200);
  expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
  await sse.ended;
  const kafka = await fromKafka(task);
  expect(sse.events).toEqual(kafka.map(asSse));
  expect(sse.events[0].id).toBe(`${task.partition}:${task.offset}`);
  expect(sse.events.map((e) => e.event)).toEqual([
    'task.accepted',
    'task.started',
    'task.progress',
    'task.progress',
    'task.progress',
    'task.succeeded',
  ]);
});

test('a heartbeat comment goes out while the stream waits (EVENTS_HEARTBEAT_MS)', async () => {
  // Streamed from a at once: waiting for b to have the task could use up the run's ~3 s and the waits in it.
  const task = await submit({ steps: 2, stepMs: 1500 }, { onlyOnA: true });
  const sse = await openSse(a.url, `/tasks/${task.taskId}/events`);
  await sse.ended;
  expect(sse.comments.filter((c) => c === 'heartbeat').length).toBeGreaterThanOrEqual(3);
  expect(sse.events.at(-1)?.event).toBe('task.succeeded');
});

test('part of a stream from one api instance, the rest from another with Last-Event-ID: nothing lost, nothing repeated', async () => {
  const task = await submit({ steps: 8, stepMs: 200 });
  const first = await openSse(a.url, `/tasks/${task.taskId}/events`);
  const head = await first.untilEvents(3);
  first.close();
  const rest = await openSse(b.url, `/tasks/${task.taskId}/events`, { 'last-event-id': head[2].id as string });
  await rest.ended;
  const kafka = await fromKafka(task);
  expect([...head, ...rest.events]).toEqual(kafka.map(asSse));
  expect(rest.events.at(-1)?.event).toBe('task.succeeded');
});

test('?after= resumes the same way; after the final event there is nothing: 204, which stops EventSource reconnecting', async () => {
  const task = await submit({ steps: 3, stepMs: 0 });
  const kafka = await fromKafka(task);
  const after = `${kafka[1].partition}:${kafka[1].offset}`;
  const rest = await openSse(b.url, `/tasks/${task.taskId}/events?after=${after}`);
  await rest.ended;
  expect(rest.events).toEqual(kafka.slice(2).map(asSse));
  const final = kafka.at(-1) as ReadEvent;
  const lastId = `${final.partition}:${final.offset}`;
  // b's stream read the final event from the events topic; its view of the tasks topic may show the end a moment
  // later, and until then a resume there is a stream that ends once it does (README): the 204 is for a task b knows
  // has ended.
  const ended = async () => (await http(b.url, `/tasks/${task.taskId}`)).body?.status === 'succeeded' || undefined;
  await until(ended, 20000, 50, 'instance b shows the task ended');
  const none = await openSse(b.url, `/tasks/${task.taskId}/events`, { 'last-event-id': lastId });
  await none.ended;
  expect(none.status).toBe(204);
  expect(none.events).toEqual([]);
});

test("a finished task's stream replays it from the first event and ends", async () => {
  const task = await submit({ steps: 2, stepMs: 0 });
  const kafka = await fromKafka(task);
  const sse = await openSse(b.url, `/tasks/${task.taskId}/events`);
  await sse.ended;
  expect(sse.events).toEqual(kafka.map(asSse));
});

test('Accept: application/hal+json lists the events so far, paged, each with its coordinate', async () => {
  const task = await submit({ steps: 3, stepMs: 0 });
  const kafka = await fromKafka(task);
  const hal = { accept: 'application/hal+json' };
  const page1 = await http(b.url, `/tasks/${task.taskId}/events?limit=4`, { headers: hal });
  expect(page1.status).toBe(200);
  expect(page1.headers.get('content-type')).toMatch(/^application\/hal\+json/);
  const listed = (e: ReadEvent) => ({
    id: `${e.partition}:${e.offset}`,
    partition: e.partition,
    offset: Number(e.offset),
    ...e.value,
  });
  expect(page1.body).toMatchObject({ count: 4, complete: false, events: kafka.slice(0, 4).map(listed) });
  expect(page1.body._links.task.href).toBe(`/tasks/${task.taskId}`);
  const next = page1.body._links.next.href as string;
  expect(next).toBe(`/tasks/${task.taskId}/events?after=${page1.body.events[3].id}&limit=4`);
  const page2 = await http(b.url, next);
  expect(page2.body).toMatchObject({ count: 2, complete: true, events: kafka.slice(4).map(listed) });
  expect(page2.body._links.next).toBeUndefined();
});

test("another tenant's task, or an unknown one, is a 404 Problem; a cursor of another partition or malformed is 400", async () => {
  const task = await submit({ steps: 1, stepMs: 0 });
  const other = await openSse(a.url, `/tasks/${task.taskId}/events`, {}, TENANT_B_KEY);
  await other.ended;
  expect(other.status).toBe(404);
  expect(other.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(other.text()).type).toBe('https://hookstream.dev/problems/not-found');
  expect((await http(a.url, `/tasks/${task.taskId}/events`, { key: TENANT_B_KEY })).status).toBe(404);
  expect((await http(a.url, '/tasks/nope/events')).status).toBe(404);
  const elsewhere = (task.partition + 1) % 3;
  const bad = await http(a.url, `/tasks/${task.taskId}/events?after=${elsewhere}:0`);
  expect(bad.status).toBe(400);
  expect(bad.body.errors[0].instance).toBe('/querystring/after');
  expect((await http(a.url, `/tasks/${task.taskId}/events?after=zero`)).status).toBe(400);
  const header = await openSse(a.url, `/tasks/${task.taskId}/events`, { 'last-event-id': 'x:1' });
  await header.ended;
  expect(header.status).toBe(400);
});

test('a client that leaves stops its partition reader', async () => {
  const task = await submit({ steps: 50, stepMs: 200 });
  const before = b.kafka.partitionReader.openReadings;
  const sse = await openSse(b.url, `/tasks/${task.taskId}/events`);
  await sse.untilEvents(2);
  expect(b.kafka.partitionReader.openReadings).toBe(before + 1);
  sse.close();
  const deadline = Date.now() + 10000;
  while (b.kafka.partitionReader.openReadings > before && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(b.kafka.partitionReader.openReadings).toBe(before);
  await http(a.url, `/tasks/${task.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test("a cursor past the end of the task's partition is no event of the task: 400, not a stream that never ends", async () => {
  const task = await submit({ steps: 2, stepMs: 1500 });
  const far = `${task.partition}:99999999`;
  // Opened while the task runs: its final event lands before that offset, so such a stream would never see it.
  const sse = await openSse(b.url, `/tasks/${task.taskId}/events?after=${far}`);
  await sse.ended;
  expect(sse.status).toBe(400);
  expect(JSON.parse(sse.text())).toMatchObject({
    type: 'https://hookstream.dev/problems/validation-failed',
    errors: [{ instance: '/querystring/after' }],
  });
  const header = await openSse(b.url, `/tasks/${task.taskId}/events`, { 'last-event-id': far });
  await header.ended;
  expect(header.status).toBe(400);
  expect(JSON.parse(header.text()).errors[0].instance).toBe('/headers/last-event-id');
  const page = await http(b.url, `/tasks/${task.taskId}/events?after=${far}`, {
    headers: { accept: 'application/hal+json' },
  });
  expect(page.status).toBe(400);
  // The task's first event is a good cursor while it runs: that stream goes on to the final event and ends.
  const rest = await openSse(b.url, `/tasks/${task.taskId}/events?after=${task.partition}:${task.offset}`);
  await rest.ended;
  expect(rest.status).toBe(200);
  expect(rest.events.at(-1)?.event).toBe('task.succeeded');
});
