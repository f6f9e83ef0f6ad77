import type { FastifyInstance } from 'fastify';
import { exampleResources } from '../../src/examples';
import type { ResourceDeclaration } from '../../src/resources/resource-declaration';
import type { RunningService } from '../../src/service';
import { bareApp } from '../support/bare-app';
import { http, type HttpResult } from '../support/http';
import {
  DocumentSchemas,
  validateWithOpenApiValidator,
  type OpenApiDocument,
  type Operation,
} from '../support/openapi-document';
import { startTestService, uniquePrefix } from '../support/test-service';

/*
 * GET /openapi.json is a valid OpenAPI 3.1 document (by @seriousme/openapi-schema-validator) that lists every
 * route with what its schemas declare, and real answers (HAL bodies with and without selection, Problems) match
 * the schemas it declares for them. The service runs with a team's own resource next to the example domain.
 */
const shipments: ResourceDeclaration = {
  name: 'shipment',
  collection: 'shipments',
  properties: { carrier: { type: 'string', minLength: 1, maxLength: 64 }, weightKg: { type: 'number', minimum: 0 } },
  required: ['carrier'],
  relations: { order: { collection: 'orders', many: false } },
};
const COLLECTIONS = ['users', 'items', 'orders', 'shipments'];

let service: RunningService;
let base: string;
let document: OpenApiDocument;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('openapi'), {
    role: 'all',
    registers: { resources: [...exampleResources, shipments] },
  });
  base = service.url;
  const res = await http(base, '/openapi.json', { key: null });
  expect(res.status).toBe(200);
  document = res.body;
});
afterAll(() => service.stop());

type Listed = [method: string, path: string, operation: Operation];
const operations = (): Listed[] =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]): Listed => [method, path, op]),
  );

const PUBLIC = [
  'GET /',
  'GET /docs/problems',
  'GET /health',
  'GET /health/live',
  'GET /health/ready',
  'GET /metrics',
  'GET /openapi.json',
  'GET /asyncapi.json',
  'GET /task-types',
  'GET /task-types/{name}',
];

const EXPECTED = [
  ...PUBLIC,
  'GET /tasks',
  'POST /tasks',
  'GET /tasks/{taskId}',
  'PATCH /tasks/{taskId}',
  'DELETE /tasks/{taskId}',
  'GET /tasks/{taskId}/events',
  'GET /subscriptions',
  'POST /subscriptions',
  'GET /subscriptions/{id}',
  'PUT /subscriptions/{id}',
  'GET /subscriptions/{id}/deliveries',
  ...COLLECTIONS.flatMap((c) => [
    `GET /${c}`,
    `POST /${c}`,
    `PATCH /${c}`,
    `GET /${c}/{id}`,
    `PUT /${c}/{id}`,
    `PATCH /${c}/{id}`,
    `DELETE /${c}/{id}`,
  ]),
];

describe('the document', () => {
  test('is public JSON, and a maintained OpenAPI validator finds it a valid OpenAPI 3.1 document', async () => {
    const res = await http(base, '/openapi.json', { key: null });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(document.openapi).toBe('3.1.0');
    const verdict = validateWithOpenApiValidator(document);
    expect(verdict).toEqual({ valid: true, version: '3.1' });
    // The validator is not one that accepts anything: a document with a response lacking its description fails.
    const broken = JSON.parse(JSON.stringify(document)) as OpenApiDocument;
    delete (broken.paths['/tasks'].post.responses['202'] as Partial<{ description: string }>).description;
    expect(validateWithOpenApiValidator(broken).valid).toBe(false);
  });

  test('lists every route, each with its own operationId, summary, tags and a declared 2xx answer', () => {
    const listed = operations().map(([method, path]) => `${method.toUpperCase()} ${path}`);
    expect([...listed].sort()).toEqual([...EXPECTED].sort());
    const ids = operations().map(([, , op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [method, path, op] of operations()) {
      const what = `${method} ${path}`;
      expect({ what, summary: typeof op.summary, tags: op.tags?.length }).toEqual({ what, summary: 'string', tags: 1 });
      const ok = Object.keys(op.responses).filter((s) => s.startsWith('2'));
      expect({ what, ok: ok.length > 0 }).toEqual({ what, ok: true });
    }
  });

  test('every error is a Problem under application/problem+json; HAL answers are application/hal+json', () => {
    expect(document.components.schemas.Problem).toMatchObject({ required: ['type', 'title', 'status', 'detail'] });
    let hal = 0;
    for (const [method, path, op] of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const types = Object.keys(response.content ?? {});
        const at = `${method} ${path} ${status}`;
        if (/^[45]/.test(status)) {
          expect({ at, types }).toEqual({ at, types: ['application/problem+json'] });
          const { schema } = response.content?.['application/problem+json'] ?? {};
          expect({ at, schema }).toEqual({ at, schema: { $ref: '#/components/schemas/Problem' } });
        } else if (types.includes('application/hal+json')) {
          hal += 1;
        }
      }
      for (const status of ['406', '4XX', '5XX']) expect(Object.keys(op.responses)).toContain(status);
      const bodyErrors = op.requestBody ? ['400', '413', '415'] : [];
      for (const status of bodyErrors) expect(Object.keys(op.responses)).toContain(status);
    }
    expect(hal).toBeGreaterThan(30);
  });

  test('the API key is a bearer scheme; public routes need none, the others can answer 401', async () => {
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.security).toEqual([{ apiKey: [] }]);
    for (const [method, path, op] of operations()) {
      const what = `${method.toUpperCase()} ${path}`;
      if (PUBLIC.includes(what)) {
        expect({ what, security: op.security }).toEqual({ what, security: [] });
        expect(op.responses['401']).toBeUndefined();
      } else {
        expect({ what, security: op.security }).toEqual({ what, security: undefined });
        expect(op.responses['401'].headers).toHaveProperty('WWW-Authenticate');
      }
    }
    // What the document says is what the service does.
    for (const what of PUBLIC.filter((p) => !p.includes('{'))) {
      expect({ what, status: (await http(base, what.slice(4), { key: null })).status }).toEqual({ what, status: 200 });
    }
    for (const path of ['/tasks', '/subscriptions', '/orders', '/shipments']) {
      expect((await http(base, path, { key: null })).status).toBe(401);
    }
  });

  test('fields, embedded, embed on every JSON answer as comma lists; Idempotency-Key, Prefer where they apply', () => {
    const header = (op: Operation, name: string) => op.parameters?.some((p) => p.in === 'header' && p.name === name);
    for (const [method, path, op] of operations()) {
      const what = `${method.toUpperCase()} ${path}`;
      const answersJson = Object.entries(op.responses).some(
        ([s, r]) =>
          s.startsWith('2') &&
          (r.content?.['application/hal+json'] !== undefined || r.content?.['application/json'] !== undefined),
      );
      const selection = (op.parameters ?? []).filter(
        (p) => p.in === 'query' && ['fields', 'embedded', 'embed'].includes(p.name),
      );
      expect({ what, selection: selection.length }).toEqual({ what, selection: answersJson ? 3 : 0 });
      for (const p of selection) {
        const list = { type: 'array', items: { type: 'string' } };
        expect(p).toMatchObject({ style: 'form', explode: false, schema: list });
      }
      const creating = method === 'post';
      expect({ what, key: header(op, 'idempotency-key') ?? false }).toEqual({ what, key: creating });
      const waits = ['POST /tasks', 'GET /tasks/{taskId}'].includes(what);
      expect({ what, prefer: header(op, 'prefer') ?? false }).toEqual({ what, prefer: waits });
    }
  });

  test('carries examples: a task submission, a task, an order, the Problems', () => {
    expect(document.paths['/tasks'].post.requestBody?.content['application/json'].example).toEqual({
      type: 'countdown',
      input: { steps: 3, stepMs: 200 },
    });
    expect(
      document.paths['/tasks/{taskId}'].get.responses['200'].content?.['application/hal+json'].example,
    ).toMatchObject({ status: 'accepted', topic: expect.any(String), partition: expect.any(Number) });
    const unauthorized = document.paths['/tasks'].get.responses['401'].content?.['application/problem+json'].example;
    expect(unauthorized).toMatchObject({ type: 'https://hookstream.dev/problems/unauthorized', status: 401 });
    expect(JSON.stringify(document.paths['/orders'].post.requestBody)).toContain('"orderNumber":1');
  });

  test("declared resources get their schemas from their declarations, a team's own included", () => {
    const { Order, User, Item, Shipment } = document.components.schemas;
    for (const schema of [Order, User, Item, Shipment]) expect(schema).toBeDefined();
    const orders = exampleResources.find((d) => d.collection === 'orders') as ResourceDeclaration;
    for (const [name, schema] of Object.entries(orders.properties)) expect(Order.properties?.[name]).toEqual(schema);
    expect(Shipment.properties?.carrier).toEqual(shipments.properties.carrier);
    expect(Shipment.properties?._embedded).toEqual({
      type: 'object',
      properties: { order: { $ref: '#/components/schemas/Order' } },
      additionalProperties: false,
    });
    expect(Order.properties?._embedded).toMatchObject({
      properties: {
        author: { $ref: '#/components/schemas/User' },
        items: { type: 'array', items: { $ref: '#/components/schemas/Item' } },
      },
    });
    const create = JSON.stringify(document.paths['/shipments'].post.requestBody);
    expect(create).toContain('"required":["carrier"]');
    const patch = document.paths['/shipments/{id}'].patch.requestBody?.content;
    expect(patch).toHaveProperty(['application/merge-patch+json']);
  });
});

describe('real answers match the schemas the document declares for them', () => {
  let schemas: DocumentSchemas;
  const failures: string[] = [];
  let checked = 0;
  beforeAll(() => {
    schemas = new DocumentSchemas(document);
  });

  /** The answer's status and media type are declared for the operation, and its body matches that schema. */
  function check(method: string, template: string, res: HttpResult): HttpResult {
    checked += 1;
    const at = `${method} ${template} → ${res.status}`;
    const operation = document.paths[template]?.[method.toLowerCase()];
    const type = res.headers.get('content-type')?.split(';')[0] ?? '';
    // An unsupported method has no operation: its 405 is a Problem like every error.
    if (!operation) {
      if (res.status !== 405) failures.push(`${at}: no such operation`);
      const validate = schemas.compile({ $ref: '#/components/schemas/Problem' });
      if (type !== 'application/problem+json' || !validate(res.body)) {
        failures.push(`${at}: ${JSON.stringify(validate.errors)}`);
      }
      return res;
    }
    const declared = operation.responses[String(res.status)] ?? operation.responses[`${String(res.status)[0]}XX`];
    if (!declared) {
      failures.push(`${at}: status not declared`);
    } else if (res.status === 204) {
      if (declared.content !== undefined || res.text !== '') failures.push(`${at}: a 204 has no body`);
    } else if (!declared.content?.[type]?.schema) {
      failures.push(`${at}: ${type} not declared`);
    } else {
      const validate = schemas.compile(declared.content[type].schema as object);
      const body = type.endsWith('json') ? res.body : res.text;
      if (!validate(body)) failures.push(`${at}: ${JSON.stringify(validate.errors)} in ${res.text.slice(0, 300)}`);
    }
    return res;
  }
  const get = (template: string, path = template, key?: string | null) =>
    http(base, path, { key }).then((r) => check('GET', template, r));

  test('discovery, health, metrics and task types', async () => {
    await get('/', '/', null);
    await get('/', '/?fields=_links', null);
    await get('/docs/problems', '/docs/problems', null);
    await get('/health/live', '/health/live', null);
    await get('/health/ready', '/health/ready', null);
    await get('/metrics', '/metrics', null);
    await get('/asyncapi.json', '/asyncapi.json', null);
    await get('/openapi.json', '/openapi.json', null);
    await get('/task-types', '/task-types?embedded=', null);
    await get('/task-types', '/task-types', null);
    await get('/task-types/{name}', '/task-types/countdown', null);
    await get('/task-types/{name}', '/task-types/nope', null);
    expect(failures).toEqual([]);
  });

  test('tasks: submitted, waited for, listed, selected, paged events, cancelled too late, forgotten', async () => {
    const submit = (body: object, headers: Record<string, string> = {}) =>
      http(base, '/tasks', {
        body,
        headers: { prefer: 'wait=20', ...headers },
      }).then((r) => check('POST', '/tasks', r));
    const done = await submit({ type: 'countdown', input: { steps: 2, stepMs: 0 } }, { 'idempotency-key': '"oa-1"' });
    expect(done.body.status).toBe('succeeded');
    const failed = await submit({ type: 'countdown', input: { steps: 2, stepMs: 0, failAt: 1 } });
    expect(failed.body.status).toBe('failed');
    const callbackUrl = 'http://127.0.0.1:9/never';
    const withCallback = await submit({ type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl });
    expect(withCallback.body._embedded.subscription.secret).toMatch(/^whsec_/);
    const id = done.body.taskId as string;
    await get('/tasks/{taskId}', `/tasks/${id}`);
    await get('/tasks/{taskId}', `/tasks/${id}?fields=status,result`);
    await get('/tasks/{taskId}', `/tasks/${failed.body.taskId}`);
    await get('/tasks/{taskId}', `/tasks/${withCallback.body.taskId}?embedded=subscription`);
    await get('/tasks', '/tasks');
    await get('/tasks', '/tasks?embedded=&limit=1');
    await get('/tasks', '/tasks?fields=total,_embedded&status=succeeded');
    await get('/tasks/{taskId}/events', `/tasks/${id}/events?limit=2`);
    await get('/tasks/{taskId}/events', `/tasks/${id}/events`);
    const late = await http(base, `/tasks/${id}`, { method: 'PATCH', body: { status: 'cancelled' } });
    expect(check('PATCH', '/tasks/{taskId}', late).status).toBe(409);
    expect(check('DELETE', '/tasks/{taskId}', await http(base, `/tasks/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await get('/tasks/{taskId}', `/tasks/${id}`)).status).toBe(404);
    const invalid = await submit({ type: 'countdown', input: { steps: '3' } });
    expect(invalid.status).toBe(400);
    expect(failures).toEqual([]);
  });

  test('subscriptions: created, listed, read, their deliveries, cancelled; a rejected one', async () => {
    const created = await http(base, '/subscriptions', {
      body: { callbackUrl: 'http://127.0.0.1:9/x', mode: 'continuous', events: ['order.created'] },
    });
    expect(check('POST', '/subscriptions', created).status).toBe(201);
    const id = created.body.UUID as string;
    await get('/subscriptions', '/subscriptions');
    await get('/subscriptions/{id}', `/subscriptions/${id}`);
    await get('/subscriptions/{id}', `/subscriptions/${id}?fields=status,mode,counts`);
    await get('/subscriptions/{id}/deliveries', `/subscriptions/${id}/deliveries`);
    const cancelled = await http(base, `/subscriptions/${id}`, { method: 'PUT' });
    expect(check('PUT', '/subscriptions/{id}', cancelled).status).toBe(202);
    const mismatch = await http(base, `/subscriptions/${id}`, { method: 'PUT', body: { UUID: 'another' } });
    expect(check('PUT', '/subscriptions/{id}', mismatch).status).toBe(403);
    const rejected = await http(base, '/subscriptions', {
      body: { callbackUrl: 'ftp://example.com/x', mode: 'once', events: ['task.failed'] },
    });
    expect(check('POST', '/subscriptions', rejected).status).toBe(403);
    expect(failures).toEqual([]);
  });

  test('resources: created alone and in bulk, embedded, selected, replaced, patched, deleted', async () => {
    const order = { orderNumber: 7, itemCount: 2, status: 'open', author: 'u-ada', items: ['i-widget', 'i-gadget'] };
    const one = check('POST', '/orders', await http(base, '/orders', { body: order }));
    expect(one.status).toBe(201);
    const bulk = { order: [order, { ...order, orderNumber: 8 }] };
    const many = check('POST', '/orders', await http(base, '/orders', { body: bulk }));
    expect(many.status).toBe(201);
    const href = `/orders/${one.body.id}`;
    await get('/orders/{id}', href);
    await get('/orders/{id}', `${href}?embedded=author,items`);
    await get('/orders/{id}', `${href}?embedded=author&fields=_embedded,status`);
    await get('/orders', '/orders');
    await get('/orders', '/orders?embedded=orders&fields=total,_embedded');
    await get('/orders', '/orders?fields=count');
    await get('/users/{id}', '/users/u-ada');
    await get('/items', '/items?limit=2');
    const put = await http(base, href, { method: 'PUT', body: { orderNumber: 9, itemCount: 3, status: 'shipped' } });
    expect(check('PUT', '/orders/{id}', put).status).toBe(200);
    const patch = await http(base, href, {
      method: 'PATCH',
      raw: JSON.stringify({ status: 'paid', author: 'u-grace' }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(check('PATCH', '/orders/{id}', patch).status).toBe(200);
    const bulkPatch = await http(base, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: { self: { href } }, status: 'closed' }] },
    });
    expect(check('PATCH', '/orders', bulkPatch).status).toBe(200);
    const partial = await http(base, '/orders?atomic=false', {
      method: 'PATCH',
      body: { order: [{ _links: { self: { href } }, status: 'x' }, { _links: { self: { href: '/orders/nope' } } }] },
    });
    expect(check('PATCH', '/orders', partial).body.type).toBe('https://hookstream.dev/problems/bulk-partially-failed');
    const shipment = await http(base, '/shipments', { body: { carrier: 'DHL', weightKg: 2.5, order: href } });
    expect(check('POST', '/shipments', shipment).status).toBe(201);
    await get('/shipments/{id}', `/shipments/${shipment.body.id}?embedded=order`);
    expect(check('DELETE', '/orders/{id}', await http(base, href, { method: 'DELETE' })).status).toBe(204);
    expect(failures).toEqual([]);
  });

  test('Problems: 400, 401, 404, 405, 406, 415', async () => {
    const expectKind = (res: HttpResult, status: number, kind: string) =>
      expect({ status: res.status, type: res.body.type }).toEqual({
        status,
        type: `https://hookstream.dev/problems/${kind}`,
      });
    const invalid = check('POST', '/orders', await http(base, '/orders', { body: { itemCount: 0, extra: true } }));
    expectKind(invalid, 400, 'validation-failed');
    const bulk = check('POST', '/orders', await http(base, '/orders', { body: { order: [{ itemCount: 'x' }] } }));
    expectKind(bulk, 400, 'bulk-failed');
    expectKind(await get('/tasks', '/tasks?limit=1000'), 400, 'validation-failed');
    expectKind(await get('/orders', '/orders', null), 401, 'unauthorized');
    expectKind(await get('/tasks/{taskId}', '/tasks/nope', 'wrong-key-0123456789'), 401, 'unauthorized');
    expectKind(await get('/orders/{id}', '/orders/nope'), 404, 'not-found');
    const unsupported = await http(base, '/orders', { method: 'DELETE' });
    expectKind(check('DELETE', '/orders', unsupported), 405, 'method-not-allowed');
    const html = { headers: { accept: 'text/html' } };
    expectKind(check('GET', '/orders', await http(base, '/orders', html)), 406, 'not-acceptable');
    expectKind(check('GET', '/metrics', await http(base, '/metrics', html)), 406, 'not-acceptable');
    const form = { raw: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } };
    expectKind(check('POST', '/tasks', await http(base, '/tasks', form)), 415, 'unsupported-media-type');
    expect(failures).toEqual([]);
  });

  afterAll(() => {
    // Every sample above was checked, none skipped.
    expect(checked).toBeGreaterThanOrEqual(60);
  });
});

describe('request validation', () => {
  test('a body is validated without type coercion: a number is not a string', async () => {
    const res = await http(base, '/tasks', { body: { type: 1, input: {} } });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/type', detail: '/type must be string' })]);
  });

  test('the OpenAPI and AsyncAPI documents take fields too (DESIGN: on every 2xx body); without it, all', async () => {
    const whole = await http(base, '/openapi.json', { key: null });
    const selected = await http(base, '/openapi.json?fields=info,openapi,nothing', { key: null });
    expect(selected.status).toBe(200);
    expect(selected.headers.get('content-type')).toMatch(/^application\/json/);
    expect(selected.body).toEqual({ openapi: whole.body.openapi, info: whole.body.info });
    const asyncApi = await http(base, '/asyncapi.json', { key: null });
    const channels = await http(base, '/asyncapi.json?fields=channels', { key: null });
    expect(channels.body).toEqual({ channels: asyncApi.body.channels });
    expect(Object.keys(asyncApi.body)).toEqual(expect.arrayContaining(['asyncapi', 'info', 'channels']));
  });

  test('a repeated selection parameter is the same as a comma list', async () => {
    const listed = await http(base, '/users/u-ada?fields=name,email');
    const repeated = await http(base, '/users/u-ada?fields=name&fields=email');
    expect(repeated.status).toBe(200);
    expect(repeated.body).toEqual(listed.body);
    expect(Object.keys(listed.body)).toEqual(['name', 'email']);
  });
});

describe('serialization', () => {
  let app: FastifyInstance;
  afterAll(() => app.close());

  test('a response schema documents a body and never shapes it: nothing it does not list is dropped', async () => {
    app = await bareApp([
      {
        collections: [],
        plugin: async (a) => {
          a.get(
            '/narrow',
            {
              schema: {
                response: {
                  200: {
                    content: {
                      'application/hal+json': {
                        schema: { type: 'object', properties: {}, additionalProperties: false },
                      },
                    },
                  },
                },
              },
            },
            async () => ({ _links: { self: { href: '/narrow' } }, unlisted: 1, nested: { deep: [1, 'two'] } }),
          );
        },
      },
    ]);
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const res = await http(url, '/narrow');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ _links: { self: { href: '/narrow' } }, unlisted: 1, nested: { deep: [1, 'two'] } });
  });
});
