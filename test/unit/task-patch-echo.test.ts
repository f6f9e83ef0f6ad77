import { TENANT_B_KEY } from '../support/api-keys';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * The README's PATCH rule on a task: the representation GET gave may be sent back with its status edited. The
 * server's fields are dropped; an id or a link naming anything else is 400, never ignored.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

async function readTask(): Promise<Record<string, unknown>> {
  const res = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 3, stepMs: 0 } } });
  expect(res.status).toBe(202);
  const got = await call(api.app, `/tasks/${res.body.taskId as string}`);
  expect(got.status).toBe(200);
  return got.body as Record<string, unknown>;
}

const patch = (id: unknown, body: unknown, key?: string) =>
  call(api.app, `/tasks/${String(id)}`, { method: 'PATCH', body, key });

test('the representation GET gave, its status set to cancelled, cancels the task', async () => {
  const task = await readTask();
  const res = await patch(task.taskId, { ...task, status: 'cancelled' });
  expect(res.status).toBe(202);
  expect(res.body).toMatchObject({ taskId: task.taskId, cancelRequested: true });
  expect(api.tasks.cancelRequested(task.taskId as string)).toBe(true);
});

test('sent back unedited it asks for nothing a task accepts: 400 at /status', async () => {
  const task = await readTask();
  const res = await patch(task.taskId, task);
  expect(res.status).toBe(400);
  expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/status']);
});

test("another task's id, or a changed link, is 400 naming it; nothing is cancelled", async () => {
  const task = await readTask();
  const other = await readTask();
  const byId = await patch(task.taskId, { ...task, taskId: other.taskId, status: 'cancelled' });
  expect(byId.status).toBe(400);
  expect(byId.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/taskId']);
  const links = { ...(task._links as object), self: { href: `/tasks/${other.taskId as string}` } };
  const byLink = await patch(task.taskId, { status: 'cancelled', _links: links });
  expect(byLink.status).toBe(400);
  expect(byLink.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/_links/self']);
  const unknown = await patch(task.taskId, { status: 'cancelled', _links: { elsewhere: { href: '/x' } } });
  expect(unknown.status).toBe(400);
  // A rel is a JSON object key: its pointer escapes `/` and `~` (RFC 6901), as every other errors[].instance does.
  const odd = await patch(task.taskId, { status: 'cancelled', _links: { 'a/b~c': { href: '/x' } } });
  expect(odd.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/_links/a~1b~0c']);
  expect(api.tasks.cancelRequested(task.taskId as string)).toBe(false);
});

test('a field that never changes (type, where the events are) sent changed is 400 naming it, not dropped', async () => {
  const task = await readTask();
  const res = await patch(task.taskId, {
    ...task,
    status: 'cancelled',
    type: 'order-report',
    offset: 0,
    partition: 99,
  });
  expect(res.status).toBe(400);
  expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/type', '/partition', '/offset']);
  expect(res.body.errors[0].detail).toBe('/type is "countdown" and never changes');
  expect(api.tasks.cancelRequested(task.taskId as string)).toBe(false);
  // The fields that move as the task runs may be behind the task's: they are dropped.
  const behind = { ...task, status: 'cancelled', attempt: 7, updatedAt: '2000-01-01T00:00:00.000Z', progress: null };
  expect((await patch(task.taskId, behind)).status).toBe(202);
});

test('a field no task has is still 400; another tenant still gets 404', async () => {
  const task = await readTask();
  const res = await patch(task.taskId, { status: 'cancelled', colour: 'blue' });
  expect(res.status).toBe(400);
  expect((await patch(task.taskId, { ...task, status: 'cancelled' }, TENANT_B_KEY)).status).toBe(404);
});
