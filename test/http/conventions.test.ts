import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

/** The spec's conventions over HTTP, against the api on the real broker: one test per rule. */
let service: RunningService;
let base: string;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('conventions'), { role: 'api' });
  base = service.url as string;
});
afterAll(() => service.stop());

const order = (extra: Record<string, unknown> = {}) => ({
  orderNumber: 7,
  itemCount: 2,
  status: 'open',
  author: 'u-ada',
  items: ['i-widget', 'i-gadget'],
  ...extra,
});

async function createOrder(extra: Record<string, unknown> = {}) {
  const res = await http(base, '/orders', { body: order(extra) });
  expect(res.status).toBe(201);
  return res;
}

function expectProblem(
  res: { status: number; headers: Headers; body: Record<string, unknown> },
  status: number,
  kind: string,
) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: `https://hookstream.dev/problems/${kind}`, status });
  for (const f of ['title', 'detail', 'instance', 'logref']) expect(typeof res.body[f]).toBe('string');
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .+\.(ts|js):\d+/);
}

describe('HAL', () => {
  test('GET / is a public HAL entry point linking every collection', async () => {
    const res = await http(base, '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
    for (const c of ['users', 'items', 'orders']) expect(res.body._links[c]).toEqual({ href: `/${c}` });
  });

  test('every 2xx body is application/hal+json with _links.self', async () => {
    const created = await createOrder();
    for (const path of ['/orders', created.headers.get('location') as string, '/users/u-ada', '/health/ready']) {
      const res = await http(base, path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
      expect(res.body._links.self.href).toEqual(expect.any(String));
    }
  });

  test('relations are links, and _embedded appears only when asked', async () => {
    const { body } = await createOrder();
    expect(body._links.author).toEqual({ href: '/users/u-ada' });
    expect(body._links.items).toEqual([{ href: '/items/i-widget' }, { href: '/items/i-gadget' }]);
    expect(body._embedded).toBeUndefined();
    expect(body.author).toBeUndefined();
  });

  test('hrefs are relative to the API root and never end in /', async () => {
    const res = await http(base, '/orders/');
    const hrefs = JSON.stringify(res.body).match(/"href":"[^"]*"/g) ?? [];
    expect(hrefs.length).toBeGreaterThan(0);
    for (const h of hrefs) expect(h).toMatch(/^"href":"\/[^"]*[^/"]"$/);
  });
});

describe('fields and embedded', () => {
  test('fields keeps only the listed top-level fields', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?fields=orderNumber,status`);
    expect(res.body).toEqual({ orderNumber: 7, status: 'open' });
  });

  test('_links is selectable like a field, and the default always includes it', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?fields=_links`);
    expect(Object.keys(res.body)).toEqual(['_links']);
    expect((await http(base, created.headers.get('location') as string)).body._links).toBeDefined();
  });

  test('embedded places only the listed relations under _embedded', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?embedded=author`);
    expect(Object.keys(res.body._embedded)).toEqual(['author']);
    expect(res.body._embedded.author).toMatchObject({
      name: 'Ada Lovelace',
      _links: { self: { href: '/users/u-ada' } },
    });
  });

  test('embed is an alias of embedded', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?embed=items`);
    expect(res.body._embedded.items.map((i: { sku: string }) => i.sku)).toEqual(['WID-1', 'GAD-1']);
  });

  test('embedding is applied first, then fields', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?embedded=author&fields=_embedded`);
    expect(Object.keys(res.body)).toEqual(['_embedded']);
    expect(res.body._embedded.author.name).toBe('Ada Lovelace');
  });

  test('unknown names in fields and embedded are ignored', async () => {
    const created = await createOrder();
    const res = await http(base, `${created.headers.get('location')}?fields=status,nope&embedded=nothing`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'open' });
  });

  test('selection applies to lists and to the bodies of POST, PUT and PATCH', async () => {
    const list = await http(base, '/orders?fields=total');
    expect(Object.keys(list.body)).toEqual(['total']);
    const post = await http(base, '/orders?fields=status', { body: order() });
    expect(post.body).toEqual({ status: 'open' });
    const href = post.headers.get('location') as string;
    const put = await http(base, `${href}?fields=itemCount`, { method: 'PUT', body: order({ itemCount: 5 }) });
    expect(put.body).toEqual({ itemCount: 5 });
    const patch = await http(base, `${href}?fields=status&embedded=author`, {
      method: 'PATCH',
      body: { status: 'paid' },
    });
    expect(patch.body).toEqual({ status: 'paid' });
  });

  test('selection never applies to Problems', async () => {
    const res = await http(base, '/orders/nope?fields=status');
    expectProblem(res, 404, 'not-found');
  });
});

describe('Problem Details for every error', () => {
  test('an unknown path is a 404 Problem', async () => {
    expectProblem(await http(base, '/no/such/thing'), 404, 'not-found');
  });

  test('an unsupported method on a known path is 405 with Allow', async () => {
    const res = await http(base, '/orders', { method: 'DELETE' });
    expectProblem(res, 405, 'method-not-allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS, PATCH, POST');
  });

  test('OPTIONS answers Allow and has no side effect', async () => {
    const before = (await http(base, '/orders')).body.total;
    const res = await http(base, '/orders/anything', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, OPTIONS, PATCH, PUT');
    expect((await http(base, '/orders')).body.total).toBe(before);
  });

  test('an Accept that allows none of our types is 406', async () => {
    expectProblem(await http(base, '/orders', { headers: { accept: 'text/html' } }), 406, 'not-acceptable');
    expect((await http(base, '/orders', { headers: { accept: 'text/html, application/hal+json;q=0.5' } })).status).toBe(
      200,
    );
  });

  test('a body that is not JSON is 415; merge patch is for PATCH only', async () => {
    expectProblem(
      await http(base, '/orders', {
        raw: 'orderNumber=1',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'unsupported-media-type',
    );
    expectProblem(
      await http(base, '/orders', {
        raw: JSON.stringify(order()),
        headers: { 'content-type': 'application/merge-patch+json' },
      }),
      415,
      'unsupported-media-type',
    );
  });

  test('a body over the limit is 413', async () => {
    expectProblem(
      await http(base, '/orders', {
        raw: `{"status":"${'x'.repeat(1_100_000)}"}`,
        headers: { 'content-type': 'application/json' },
      }),
      413,
      'payload-too-large',
    );
  });

  test('malformed JSON is 400', async () => {
    expectProblem(
      await http(base, '/orders', { raw: '{"orderNumber": 1,', headers: { 'content-type': 'application/json' } }),
      400,
      'malformed-body',
    );
  });

  test('spec validation example: itemCount must be a positive integer; each offence is an errors[] entry with a pointer', async () => {
    for (const itemCount of [0, -100, 1.3232, '42', null]) {
      const res = await http(base, '/orders', { body: { ...order(), itemCount } });
      expectProblem(res, 400, 'validation-failed');
      expect(res.body.errors).toEqual([
        expect.objectContaining({ instance: '/itemCount', type: 'https://hookstream.dev/problems/invalid-field' }),
      ]);
    }
    const many = await http(base, '/orders', { body: { itemCount: 0, extra: true } });
    const pointers = many.body.errors.map((e: { instance: string }) => e.instance).sort();
    expect(pointers).toEqual(['/extra', '/itemCount', '/orderNumber', '/status']);
  });

  test('spec 401 example: no credentials is 401 with WWW-Authenticate: Bearer', async () => {
    const res = await http(base, '/orders', { key: null });
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    const bad = await http(base, '/orders', { key: 'not-a-key' });
    expectProblem(bad, 401, 'unauthorized');
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  test('root, health and docs are public; everything else needs a key', async () => {
    for (const p of ['/', '/health/live', '/health/ready', '/docs/problems'])
      expect((await http(base, p, { key: null })).status).toBe(200);
    for (const p of ['/orders', '/users', '/items/i-widget'])
      expect((await http(base, p, { key: null })).status).toBe(401);
  });

  test('status always equals the HTTP status, and logref is the request id', async () => {
    const res = await http(base, '/orders/missing');
    expect(res.body.status).toBe(res.status);
    expect(res.body.logref).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.instance).toBe('/orders/missing');
  });
});

describe('method semantics', () => {
  test('PUT replaces an existing resource in full; repeating it gives the same state', async () => {
    const href = (await createOrder()).headers.get('location') as string;
    const replacement = { orderNumber: 8, itemCount: 3, status: 'shipped', items: ['i-gizmo'] };
    const first = await http(base, href, { method: 'PUT', body: replacement });
    const second = await http(base, href, { method: 'PUT', body: replacement });
    expect(first.status).toBe(200);
    const strip = (b: Record<string, unknown>) => ({ ...b, updatedAt: undefined });
    expect(strip(second.body)).toEqual(strip(first.body));
    expect(second.body._links.author).toBeUndefined();
    expect(second.body).toMatchObject({ orderNumber: 8, itemCount: 3, status: 'shipped' });
  });

  test('PUT never creates: a missing resource is 404', async () => {
    expectProblem(await http(base, '/orders/does-not-exist', { method: 'PUT', body: order() }), 404, 'not-found');
  });

  test('PUT is not a partial update: a partial body is 400', async () => {
    const href = (await createOrder()).headers.get('location') as string;
    const res = await http(base, href, { method: 'PUT', body: { status: 'paid' } });
    expectProblem(res, 400, 'validation-failed');
    expect((await http(base, href)).body.status).toBe('open');
  });

  test('PATCH is a JSON merge patch: listed fields change, null removes, others stay', async () => {
    const href = (await createOrder()).headers.get('location') as string;
    const res = await http(base, href, {
      method: 'PATCH',
      raw: JSON.stringify({ status: 'paid', author: null }),
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'paid', itemCount: 2, orderNumber: 7 });
    expect(res.body._links.author).toBeUndefined();
  });

  test('PATCH that would make the resource invalid is 400 and changes nothing', async () => {
    const href = (await createOrder()).headers.get('location') as string;
    const res = await http(base, href, { method: 'PATCH', body: { itemCount: 0 } });
    expectProblem(res, 400, 'validation-failed');
    expect(res.body.errors[0].instance).toBe('/itemCount');
    expect((await http(base, href)).body.itemCount).toBe(2);
  });

  test('DELETE removes the resource; repeating it is 404', async () => {
    const href = (await createOrder()).headers.get('location') as string;
    expect((await http(base, href, { method: 'DELETE' })).status).toBe(204);
    expectProblem(await http(base, href), 404, 'not-found');
    expectProblem(await http(base, href, { method: 'DELETE' }), 404, 'not-found');
  });

  test('HEAD answers the headers of GET without a body', async () => {
    const res = await http(base, '/orders', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
    expect(res.text).toBe('');
  });

  test('X-HTTP-Method-Override is ignored: no tunnelling', async () => {
    const res = await http(base, '/orders', { body: order(), headers: { 'x-http-method-override': 'DELETE' } });
    expect(res.status).toBe(201);
    expect((await http(base, res.headers.get('location') as string)).status).toBe(200);
  });

  test('POST with one object creates one, with Location, and the write is readable at once', async () => {
    const res = await createOrder({ orderNumber: 99 });
    const href = res.headers.get('location') as string;
    expect(href).toMatch(/^\/orders\/[0-9a-f-]{36}$/);
    expect(res.body._links.self.href).toBe(href);
    expect((await http(base, href)).body.orderNumber).toBe(99);
  });

  test('a relation naming a missing resource is a 400 for that field', async () => {
    const res = await http(base, '/orders', { body: order({ author: 'u-nobody', items: ['i-widget', 'i-none'] }) });
    expectProblem(res, 400, 'validation-failed');
    expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/author', '/items/1']);
  });

  test('lists are paged with next and prev links', async () => {
    const page = await http(base, '/users?limit=1');
    expect(page.body.count).toBe(1);
    expect(page.body._links.next).toEqual({ href: '/users?offset=1&limit=1' });
    expect(page.body._links.prev).toBeUndefined();
    const next = await http(base, page.body._links.next.href);
    expect(next.body._links.prev).toEqual({ href: '/users?offset=0&limit=1' });
    expect(next.body._embedded.users[0].id).not.toBe(page.body._embedded.users[0].id);
    expectProblem(await http(base, '/users?limit=1000'), 400, 'validation-failed');
  });
});
