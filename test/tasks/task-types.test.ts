import type { RunningService } from '../../src/service';
import { countdown } from '../../src/examples/countdown';
import { orderReport } from '../../src/examples/order-report';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

/** GET /task-types: what POST /tasks accepts, discoverable from the root and from a 400. */
let service: RunningService;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('task-types'), { role: 'api' });
});
afterAll(() => service.stop());

test('GET /task-types embeds every declared type with its name, description and input schema', async () => {
  const res = await http(service.url, '/task-types', { key: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
  expect(res.body._links.self.href).toBe('/task-types');
  expect(res.body._links.item).toEqual([{ href: '/task-types/countdown' }, { href: '/task-types/order-report' }]);
  expect(res.body._embedded['task-types']).toEqual(
    [countdown, orderReport].map((t) => ({
      _links: {
        self: { href: `/task-types/${t.name}` },
        collection: { href: '/task-types' },
        tasks: { href: `/tasks?type=${t.name}` },
      },
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
    })),
  );
  for (const t of res.body._embedded['task-types']) expect(t.description.length).toBeGreaterThan(10);
});

test('GET /task-types/{name} shows one; an unknown name is a 404 Problem', async () => {
  const one = await http(service.url, '/task-types/countdown');
  expect(one.body).toMatchObject({ name: 'countdown', inputSchema: countdown.inputSchema });
  const none = await http(service.url, '/task-types/__proto__');
  expect(none.status).toBe(404);
  expect(none.body.type).toBe('https://hookstream.dev/problems/not-found');
});

test('the root links the task types, and a 400 for an unknown type links to them', async () => {
  const root = await http(service.url, '/', { key: null });
  expect(root.body._links['task-types']).toEqual({ href: '/task-types' });
  const bad = await http(service.url, '/tasks', { body: { type: 'nope', input: {} } });
  expect(bad.status).toBe(400);
  const entry = bad.body.errors.find((e: { instance: string }) => e.instance === '/type');
  expect(entry._links).toEqual({ 'task-types': { href: '/task-types' } });
});
