import { canonicalId } from '../../src/lib/canonical-id';
import { ResourceRegistry } from '../../src/resources/resource-registry';
import { ResourceStore } from '../../src/resources/resource-store';
import { seedResources } from '../../src/resources/seed';
import { FakeKafka } from './fakes';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * RFC 9562 §4: a UUID is read without regard to case and written in lower case. The ids the service makes are
 * lower case; one a client sends back in upper case (copied through a tool that upper-cases them) names the same
 * task, subscription or resource, in the path and in a body, and the answer shows it as the service wrote it.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi({ allowPrivate: true });
});
afterAll(() => api.app.close());

const upper = (id: string) => id.toUpperCase();

test('canonicalId lowers a UUID only; other ids are kept as they are', () => {
  expect(canonicalId('0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B')).toBe('0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
  expect(canonicalId('u-ADA')).toBe('u-ADA');
  expect(canonicalId('0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B-extra')).toBe('0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B-extra');
  expect(canonicalId('0193A1B2XC3D4-7E5F-8A9B-0C1D2E3F4A5B')).toBe('0193A1B2XC3D4-7E5F-8A9B-0C1D2E3F4A5B');
});

test('a task is found by its id in upper case, and shown with the id it was given', async () => {
  const created = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
  expect(created.status).toBe(202);
  const { taskId } = created.body;
  const got = await call(api.app, `/tasks/${upper(taskId)}`);
  expect(got.status).toBe(200);
  expect(got.body).toMatchObject({ taskId, _links: { self: { href: `/tasks/${taskId}` } } });
  const events = await call(api.app, `/tasks/${upper(taskId)}/events`);
  expect(events.status).toBe(200);
  // A PATCH that sends the id back in upper case names the same task, so it is no change of id.
  const patched = await call(api.app, `/tasks/${upper(taskId)}`, {
    method: 'PATCH',
    body: { taskId: upper(taskId), UUID: upper(taskId), status: 'cancelled' },
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  expect(patched.status).toBe(202);
  expect(patched.body.taskId).toBe(taskId);
  // The representation GET gave, sent back with its links in upper case, names the same task and the same links.
  const { body: current } = await call(api.app, `/tasks/${taskId}`);
  const shouted = JSON.parse(JSON.stringify(current._links).replaceAll(taskId, upper(taskId)));
  expect(JSON.stringify(shouted)).toContain(upper(taskId));
  const echoed = await call(api.app, `/tasks/${taskId}`, {
    method: 'PATCH',
    body: { _links: shouted, status: 'cancelled' },
    headers: { 'content-type': 'application/merge-patch+json' },
  });
  expect(echoed.status).toBe(202);
  // A Problem's instance is the path as it was asked for; its detail names the task as the service writes it.
  const missing = '0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
  const notFound = await call(api.app, `/tasks/${missing}`);
  expect(notFound.status).toBe(404);
  expect(notFound.body.instance).toBe(`/tasks/${missing}`);
  expect(notFound.body.detail).toContain(missing.toLowerCase());
});

test('a name in the path is no id: a task type named in UUID form keeps its case', async () => {
  const name = '0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
  const res = await call(api.app, `/task-types/${name}`);
  expect(res.status).toBe(404);
  expect(res.body.detail).toContain(name);
});

test('a seeded resource whose id is a UUID in upper case is stored, and found, in lower case', async () => {
  const kafka = new FakeKafka();
  const store = await ResourceStore.open(kafka, {
    publisher: kafka.publisher,
    resourcesTopic: kafka.topics.resources,
    domainEventsTopic: kafka.topics.domainEvents,
    timeoutMs: 5000,
  });
  const id = '0193A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
  const registry = new ResourceRegistry([
    { name: 'thing', collection: 'things', properties: {}, required: [], relations: {}, seeds: [{ id, fields: {} }] },
  ]);
  expect(await seedResources(registry, store)).toBe(1);
  expect(store.get('things', id.toLowerCase())).toBeDefined();
});

test('a subscription to a task named in upper case subscribes to that task, and is found in upper case', async () => {
  const created = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
  const { taskId } = created.body;
  const sub = await call(api.app, '/subscriptions', {
    body: { callbackUrl: 'http://127.0.0.1:9/hook', mode: 'once', taskId: upper(taskId) },
  });
  expect(sub.status).toBe(201);
  expect(sub.body.taskId).toBe(taskId);
  const got = await call(api.app, `/subscriptions/${upper(sub.body.UUID)}`);
  expect(got.status).toBe(200);
  expect(got.body.UUID).toBe(sub.body.UUID);
  const deliveries = await call(api.app, `/subscriptions/${upper(sub.body.UUID)}/deliveries`);
  expect(deliveries.status).toBe(200);
});

test('a resource is found, changed and related to by its id in upper case', async () => {
  const user = await call(api.app, '/users', { body: { name: 'Grace', email: 'grace@example.com' } });
  expect(user.status).toBe(201);
  const userId = user.body.id as string;
  expect((await call(api.app, `/users/${upper(userId)}`)).status).toBe(200);
  const order = await call(api.app, '/orders', {
    body: { orderNumber: 7, itemCount: 1, status: 'open', author: upper(userId) },
  });
  expect(order.status).toBe(201);
  expect(order.body._links.author).toEqual({ href: `/users/${userId}` });
  const orderId = order.body.id as string;
  // The representation sent back names the order in upper case, in `id` and in its self link: the same order.
  const { _links, ...fields } = order.body;
  const put = await call(api.app, `/orders/${upper(orderId)}`, {
    method: 'PUT',
    body: { ...fields, id: upper(orderId), status: 'shipped', _links: { self: { href: `/orders/${upper(orderId)}` } } },
  });
  expect(put.status).toBe(200);
  expect(put.body).toMatchObject({ id: orderId, status: 'shipped', _links: { self: { href: `/orders/${orderId}` } } });
});

test('a bulk update names its orders by self links in upper case; one named twice in two cases is one order', async () => {
  const made = await call(api.app, '/orders', {
    body: { order: [1, 2].map((n) => ({ orderNumber: n, itemCount: 1, status: 'open', author: 'u-ada' })) },
  });
  expect(made.status).toBe(201);
  const [a, b] = made.body._embedded.orders as { id: string }[];
  const href = (id: string) => ({ self: { href: `/orders/${upper(id)}` } });
  const res = await call(api.app, '/orders', {
    method: 'PATCH',
    body: {
      order: [
        { _links: href(a.id), status: 'packed' },
        { _links: href(b.id), status: 'packed' },
      ],
    },
  });
  expect(res.status).toBe(200);
  expect((await call(api.app, `/orders/${a.id}`)).body.status).toBe('packed');
  expect((await call(api.app, `/orders/${b.id}`)).body.status).toBe('packed');
  const twice = await call(api.app, '/orders', {
    method: 'PATCH',
    body: {
      order: [
        { _links: href(a.id), status: 'x' },
        { _links: { self: { href: `/orders/${a.id}` } }, status: 'y' },
      ],
    },
  });
  expect(twice.status).toBe(400);
  expect(twice.body.errors[0].detail).toMatch(/same order as element 0/);
});
