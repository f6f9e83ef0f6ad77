import { taskEventRecords, type TaskEventKind } from '../../src/tasks/task-events';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { connect } from 'node:net';
import { TENANT_A_KEY, TENANT_B_KEY } from '../support/api-keys';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * GET /tasks/{id}/events over in-memory Kafka: the task's events are read from the publisher's log by a
 * FakePartitionReader, as the real route reads the task's partition. The runner is played by publishing its records.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

const SSE = { accept: 'text/event-stream' };
const ALL = ['task.accepted', 'task.started', 'task.progress', 'task.progress', 'task.succeeded'];

async function submit(): Promise<{ taskId: string; partition: number; offset: number }> {
  const res = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 0 } } });
  expect(res.status).toBe(202);
  return res.body;
}

/** One event and its snapshot in one transaction, as the runner writes them. */
async function runnerEmits(taskId: string, kind: TaskEventKind, change: Partial<TaskSnapshot>, data: unknown) {
  const now = api.tasks.get(taskId);
  if (!now) throw new Error(`no task ${taskId}`);
  const snapshot = { ...now, ...change, updatedAt: new Date().toISOString() };
  await api.kafka.publisher.publish(taskEventRecords(api.kafka.topics, kind, snapshot, data));
}

const steps: [TaskEventKind, Partial<TaskSnapshot>, unknown][] = [
  ['task.started', { status: 'running', attempt: 1 }, { attempt: 1 }],
  ['task.progress', { progress: { current: 1, total: 2 } }, { current: 1, total: 2 }],
  ['task.progress', { progress: { current: 2, total: 2 } }, { current: 2, total: 2 }],
  [
    'task.succeeded',
    { status: 'succeeded', result: { steps: 2 }, finishedAt: new Date().toISOString() },
    { result: { steps: 2 } },
  ],
];

async function runToEnd(...taskIds: string[]): Promise<void> {
  // Interleaved, so every task's events share the partition with another's.
  for (const step of steps) for (const taskId of taskIds) await runnerEmits(taskId, ...step);
}

interface SseEvent {
  id?: string;
  event?: string;
  data?: string;
}

function parseSse(text: string): { events: SseEvent[]; head: string } {
  const blocks = text.split('\n\n').filter(Boolean);
  const events = blocks
    .filter((b) => b.includes('event: '))
    .map((block) => {
      const e: SseEvent = {};
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(': ');
        const value = rest.join(': ');
        if (field === 'id' || field === 'event') e[field] = value;
        if (field === 'data') e.data = e.data === undefined ? value : `${e.data}\n${value}`;
      }
      return e;
    });
  return { events, head: blocks[0] ?? '' };
}

describe('Server-Sent Events', () => {
  test("a finished task's events in order: id = partition:offset (the first is the 202's), data = the record", async () => {
    const task = await submit();
    const other = await submit();
    await runToEnd(task.taskId, other.taskId);
    const res = await call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const { events, head } = parseSse(res.text);
    expect(head).toMatch(/^retry: 1000\n: events of task /);
    expect(events.map((e) => e.event)).toEqual(ALL);
    expect(events[0].id).toBe(`${task.partition}:${task.offset}`);
    const offsets = events.map((e) => Number(e.id?.split(':')[1]));
    expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
    for (const e of events) {
      expect(JSON.parse(String(e.data))).toMatchObject({ event: e.event, taskId: task.taskId });
    }
    expect(api.reader.openReadings).toBe(0);
  });

  test('a live stream sends what the runner writes after it opened, and ends after the final event', async () => {
    const task = await submit();
    const opened = new Promise<void>((resolve) => {
      const listener = () => {
        api.reader.opened.delete(listener);
        resolve();
      };
      api.reader.opened.add(listener);
    });
    const streaming = call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE });
    await opened;
    await runToEnd(task.taskId);
    const res = await streaming;
    expect(parseSse(res.text).events.map((e) => e.event)).toEqual(ALL);
    expect(api.reader.openReadings).toBe(0);
  });

  test('Last-Event-ID or ?after= resumes after that event; nothing left after the last is 204', async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const all = parseSse((await call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE })).text).events;
    const resumeAfter = (id?: string) =>
      call(api.app, `/tasks/${task.taskId}/events`, {
        headers: { ...SSE, 'last-event-id': String(id) },
      });
    const resumed = await resumeAfter(all[1].id);
    expect(parseSse(resumed.text).events.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
    const after = await call(api.app, `/tasks/${task.taskId}/events?after=${all[3].id}`, { headers: SSE });
    expect(parseSse(after.text).events.map((e) => e.event)).toEqual(['task.succeeded']);
    const done = await resumeAfter(all[4].id);
    expect(done.status).toBe(204);
  });

  test('with both ?after= and Last-Event-ID, the later one: a reconnecting EventSource keeps its URL', async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const all = parseSse((await call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE })).text).events;
    const ids = (after: string | undefined, lastEventId: string | undefined) =>
      call(api.app, `/tasks/${task.taskId}/events${after ? `?after=${after}` : ''}`, {
        headers: { ...SSE, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      }).then((res) => parseSse(res.text).events.map((e) => e.id));
    const rest = (i: number) => all.slice(i + 1).map((e) => e.id);
    expect(await ids(all[0].id, all[2].id)).toEqual(rest(2));
    expect(await ids(all[2].id, all[0].id)).toEqual(rest(2));
    // A bad one of the two is still a 400 naming it, whatever the other says.
    const bad = await call(api.app, `/tasks/${task.taskId}/events?after=${all[0].id}`, {
      headers: { ...SSE, 'last-event-id': 'soon' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].instance).toBe('/headers/last-event-id');
  });

  test("the stream's head carries the conventions' headers and Vary, as the JSON answer does", async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const headers = {
      'x-request-id': 'req-sse-1',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    };
    const sse = await call(api.app, `/tasks/${task.taskId}/events`, { headers: { ...SSE, ...headers } });
    const hal = await call(api.app, `/tasks/${task.taskId}/events`, { headers });
    for (const res of [sse, hal]) {
      expect(res.status).toBe(200);
      expect(res.headers['x-request-id']).toBe('req-sse-1');
      expect(String(res.headers.traceparent)).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
      expect(res.headers.vary).toBe('Accept, Last-Event-ID');
    }
    expect(sse.headers['content-type']).toMatch(/^text\/event-stream/);
  });

  test('HEAD asking for the stream gets the head GET would send, without a body or a Content-Length', async () => {
    const task = await submit();
    const url = `/tasks/${task.taskId}/events`;
    const live = await call(api.app, url, { method: 'HEAD', headers: SSE });
    expect(live.status).toBe(200);
    expect(live.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(live.headers['cache-control']).toBe('no-cache');
    expect(live.headers.vary).toBe('Accept, Last-Event-ID');
    expect(live.headers['content-length']).toBeUndefined();
    expect(live.text).toBe('');
    await runToEnd(task.taskId);
    const get = await call(api.app, url, { headers: SSE });
    const head = await call(api.app, url, { method: 'HEAD', headers: SSE });
    expect(head.status).toBe(get.status);
    expect(head.headers['content-type']).toBe(get.headers['content-type']);
    const last = parseSse(get.text).events.at(-1)?.id;
    const done = { ...SSE, 'last-event-id': String(last) };
    const endedHead = await call(api.app, url, { method: 'HEAD', headers: done });
    const endedGet = await call(api.app, url, { headers: done });
    expect([endedHead.status, endedGet.status]).toEqual([204, 204]);
    // RFC 9110 §8.6: no Content-Length on a 204, which GET's 204 does not send either.
    expect(endedHead.headers['content-length']).toBeUndefined();
    expect(endedGet.headers['content-length']).toBeUndefined();
    expect(endedHead.headers.vary).toBe(endedGet.headers.vary);
    expect(api.reader.openReadings).toBe(0);
  });

  test('a client that asks for Connection: close has its connection closed once the stream ended', async () => {
    // A stream that said keep-alive whatever the client asked held the socket until the idle timeout (~70 s).
    const task = await submit();
    await runToEnd(task.taskId);
    const port = Number(new URL(await api.app.listen({ port: 0, host: '127.0.0.1' })).port);
    const request =
      `GET /tasks/${task.taskId}/events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n` +
      `Authorization: Bearer ${TENANT_A_KEY}\r\nConnection: close\r\n\r\n`;
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('event: task.succeeded');
    // Well under the idle timeout the old head held it for: the server closed it, not a timer.
    expect(Date.now() - started).toBeLessThan(10000);
  });

  test('a cursor of another partition, or not a coordinate, is a 400 naming where it was', async () => {
    const task = await submit();
    const header = await call(api.app, `/tasks/${task.taskId}/events`, { headers: { ...SSE, 'last-event-id': '7:1' } });
    expect(header.status).toBe(400);
    expect(header.body.errors[0].instance).toBe('/headers/last-event-id');
    const query = await call(api.app, `/tasks/${task.taskId}/events?after=soon`, { headers: SSE });
    expect(query.status).toBe(400);
    expect(query.body.errors[0].instance).toMatch(/^\/querystring\/after/);
  });

  test("another tenant's task has no events to show: 404", async () => {
    const task = await submit();
    expect((await call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE, key: TENANT_B_KEY })).status).toBe(404);
  });
});

describe('the same events as HAL JSON pages', () => {
  test('Accept chooses between the stream and the page by q-values; a tie goes to the one named', async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const kind = async (accept: string | undefined) => {
      const res = await call(api.app, `/tasks/${task.taskId}/events`, { headers: accept ? { accept } : {} });
      expect(res.status).toBe(200);
      return String(res.headers['content-type']).split(';')[0];
    };
    const sse = 'text/event-stream';
    const hal = 'application/hal+json';
    expect(await kind(undefined)).toBe(hal);
    expect(await kind('*/*')).toBe(hal);
    expect(await kind('text/event-stream')).toBe(sse);
    expect(await kind('text/*')).toBe(sse);
    expect(await kind('text/event-stream, application/hal+json')).toBe(sse);
    expect(await kind('text/event-stream;q=0.5, application/hal+json')).toBe(hal);
    expect(await kind('application/json;q=0.4, text/event-stream;q=0.6')).toBe(sse);
    expect(await kind('text/*;q=0.3, */*')).toBe(hal);
    expect(await kind('text/event-stream;q=0, */*')).toBe(hal);
    // HAL JSON refused by name is refused here as in the 406 check: the stream, which */* takes, is what goes.
    expect(await kind('application/hal+json;q=0, */*;q=0.1')).toBe(sse);
    expect(await kind('application/json;q=0, */*;q=0.1')).toBe(hal);
    // A q that is no number counts as if it were not there, here and in the 406 check alike.
    expect(await kind('text/event-stream;q=abc')).toBe(sse);
    expect(await kind('text/event-stream;q=-1, application/hal+json')).toBe(hal);
  });

  test('limit at a time, _links.next after the last one, complete once the final event is listed', async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const seen: string[] = [];
    let href: string | undefined = `/tasks/${task.taskId}/events?limit=2`;
    let pages = 0;
    let last: { complete: boolean } | undefined;
    while (href) {
      const page = await call(api.app, href);
      expect(page.status).toBe(200);
      seen.push(...page.body.events.map((e: { event: string }) => e.event));
      last = page.body;
      href = page.body._links.next?.href;
      pages += 1;
    }
    expect(seen).toEqual(ALL);
    expect(pages).toBe(3);
    expect(last?.complete).toBe(true);
  });

  test("a running task's page lists the events so far and is not complete", async () => {
    const task = await submit();
    await runnerEmits(task.taskId, ...steps[0]);
    const page = await call(api.app, `/tasks/${task.taskId}/events`);
    expect(page.body).toMatchObject({ count: 2, complete: false, _links: { task: { href: `/tasks/${task.taskId}` } } });
    expect(page.body.events.map((e: { event: string }) => e.event)).toEqual(['task.accepted', 'task.started']);
    expect(page.body._links.next).toBeUndefined();
    // A page that its limit fills with the last events so far has no next either: following it would find nothing.
    const full = await call(api.app, `/tasks/${task.taskId}/events?limit=2`);
    expect(full.body).toMatchObject({ count: 2, complete: false });
    expect(full.body._links.next).toBeUndefined();
    const short = await call(api.app, `/tasks/${task.taskId}/events?limit=1`);
    expect(short.body._links.next.href).toBe(`/tasks/${task.taskId}/events?after=${short.body.events[0].id}&limit=1`);
  });

  test('a page that Last-Event-ID starts names that cursor in its self link', async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const first = await call(api.app, `/tasks/${task.taskId}/events?limit=1`);
    const id = first.body.events[0].id;
    const resumed = await call(api.app, `/tasks/${task.taskId}/events?limit=1`, { headers: { 'last-event-id': id } });
    expect(resumed.body.events[0].id).not.toBe(id);
    const self = resumed.body._links.self.href;
    expect(self).toBe(`/tasks/${task.taskId}/events?after=${id}&limit=1`);
    // The self link serves the same page without the header.
    expect((await call(api.app, self)).body.events).toEqual(resumed.body.events);
  });
});

describe("records under the task's key that are not the runner's", () => {
  test('a record that is no JSON object is listed as its text, and a value never hides the coordinates', async () => {
    const task = await submit();
    const topic = api.kafka.topics.taskEvents;
    const foreign = [
      'not json at all',
      '[1,2]',
      '"text"',
      JSON.stringify({ event: 'task.weird', id: 'x', offset: -5 }),
    ];
    await runnerEmits(task.taskId, ...steps[0]);
    await api.kafka.publisher.publish(foreign.map((value) => ({ topic, key: task.taskId, value })));
    for (const step of steps.slice(1)) await runnerEmits(task.taskId, ...step);

    const page = await call(api.app, `/tasks/${task.taskId}/events?limit=100`);
    expect(page.status).toBe(200);
    const events = page.body.events as Record<string, unknown>[];
    expect(events.map((e) => e.event)).toEqual([
      'task.accepted',
      'task.started',
      'message',
      'message',
      'message',
      'task.weird',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
    expect(events.slice(2, 5).map((e) => e.value)).toEqual(foreign.slice(0, 3));
    for (const e of events) expect(e.id).toBe(`${e.partition}:${e.offset}`);
    // The stream sends the same records, the text as its data.
    const stream = parseSse((await call(api.app, `/tasks/${task.taskId}/events`, { headers: SSE })).text);
    expect(stream.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(stream.events.slice(2, 5).map((e) => e.data)).toEqual(foreign.slice(0, 3));
  });

  test("the cursor before a partition's first record (<partition>:-1) starts at the first event", async () => {
    const task = await submit();
    await runToEnd(task.taskId);
    const all = await call(api.app, `/tasks/${task.taskId}/events`);
    for (const cursor of [`?after=${task.partition}:-1`, '']) {
      const headers: Record<string, string> = cursor ? {} : { 'last-event-id': `${task.partition}:-1` };
      const page = await call(api.app, `/tasks/${task.taskId}/events${cursor}`, { headers });
      expect(page.status).toBe(200);
      expect(page.body.events).toEqual(all.body.events);
    }
    expect((await call(api.app, `/tasks/${task.taskId}/events?after=${task.partition}:-2`)).status).toBe(400);
  });
});
