import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

/** RFC 7240 `Prefer: wait` on the tracking resource, and Retry-After while a task is not final. */
let service: RunningService;
let base: string;

beforeAll(async () => {
  // A short idle limit (request + Kafka timeout + 5 s = 8 s) shows a long wait is not cut as an idle connection.
  const env = { HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '1000', KAFKA_TIMEOUT_MS: '2000' };
  service = await startTestService(uniquePrefix('wait'), { role: 'all', env });
  base = service.url;
});
afterAll(() => service.stop());

async function submit(input: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await http(base, '/tasks', { body: { type: 'countdown', input }, headers });
  expect(res.status).toBe(202);
  return res;
}

test('without Prefer nothing waits: a running task answers at once, with Retry-After and no Preference-Applied', async () => {
  const { body } = await submit({ steps: 50, stepMs: 200 });
  const res = await http(base, `/tasks/${body.taskId}`);
  expect(res.status).toBe(200);
  expect(['accepted', 'running']).toContain(res.body.status);
  expect(res.headers.get('retry-after')).toBe('1');
  expect(res.headers.get('preference-applied')).toBeNull();
  expect(body).not.toHaveProperty('result');
  await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test('GET with Prefer: wait=N answers as soon as the task is final, with its result and no Retry-After', async () => {
  const { body } = await submit({ steps: 4, stepMs: 250 });
  const started = Date.now();
  const res = await http(base, `/tasks/${body.taskId}`, { headers: { prefer: 'wait=20' } });
  expect(Date.now() - started).toBeLessThan(19000);
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: 'succeeded', result: { steps: 4 } });
  expect(res.headers.get('preference-applied')).toBe('wait=20');
  expect(res.headers.get('retry-after')).toBeNull();
});

test('GET with Prefer: wait=N answers after N seconds with the current state when the task is still running', async () => {
  const { body } = await submit({ steps: 100, stepMs: 200 });
  const started = Date.now();
  const res = await http(base, `/tasks/${body.taskId}`, { headers: { prefer: 'respond-async, wait=2' } });
  expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  expect(res.status).toBe(200);
  expect(['accepted', 'running']).toContain(res.body.status);
  expect(res.headers.get('preference-applied')).toBe('wait=2');
  expect(res.headers.get('retry-after')).toBe('1');
  await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test('a wait longer than the idle-connection limit is answered, not cut', async () => {
  const { body } = await submit({ steps: 100, stepMs: 200 });
  const res = await http(base, `/tasks/${body.taskId}`, { headers: { prefer: 'wait=10' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('preference-applied')).toBe('wait=10');
  await http(base, `/tasks/${body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test('POST /tasks with Prefer: wait=N is still 202, held until the task is final, showing status and result', async () => {
  const res = await submit({ steps: 3, stepMs: 100 }, { prefer: 'wait=20' });
  expect(res.headers.get('location')).toBe(`/tasks/${res.body.taskId}`);
  expect(res.headers.get('preference-applied')).toBe('wait=20');
  expect(res.body).toMatchObject({ status: 'succeeded', result: { steps: 3 }, progress: { current: 3, total: 3 } });
  expect(res.headers.get('retry-after')).toBeNull();
});

test('POST /tasks with a short wait answers 202 with the current, non-final status and Retry-After', async () => {
  const res = await submit({ steps: 100, stepMs: 200 }, { prefer: 'wait=1' });
  expect(['accepted', 'running']).toContain(res.body.status);
  expect(res.headers.get('preference-applied')).toBe('wait=1');
  expect(res.headers.get('retry-after')).toBe('1');
  await http(base, `/tasks/${res.body.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } });
});

test('wait is capped at 60 seconds, and an unreadable preference is ignored', async () => {
  const { body } = await submit({ steps: 1, stepMs: 0 }, { prefer: 'wait=20' });
  const capped = await http(base, `/tasks/${body.taskId}`, { headers: { prefer: 'wait=3600' } });
  expect(capped.headers.get('preference-applied')).toBe('wait=60');
  const odd = await http(base, `/tasks/${body.taskId}`, { headers: { prefer: 'wait=soon' } });
  expect(odd.status).toBe(200);
  expect(odd.headers.get('preference-applied')).toBeNull();
});
