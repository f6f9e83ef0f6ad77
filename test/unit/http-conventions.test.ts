import { problemType } from '../../src/problems/problem-types';
import { TENANT_A_KEY } from '../support/api-keys';
import { call, inMemoryApi, type Call, type InMemoryApi } from './in-memory-api';

/*
 * The HTTP conventions (DESIGN "HTTP decisions") on the api's real routes and stores, over in-memory Kafka: a socket
 * or a broker adds nothing to what is asked here. The integration suite (test/http/conventions.test.ts) asks the
 * same of the running service.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

const newOrder = { orderNumber: 7, itemCount: 2, status: 'open', author: 'u-ada', items: ['i-widget'] };

async function createOrder(fields: Record<string, unknown> = newOrder): Promise<string> {
  const res = await call(api.app, '/orders', { body: fields });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const hrefsOf = (links: Record<string, { href: string } | { href: string }[]>) =>
  Object.values(links)
    .flat()
    .map((l) => l.href);

describe('HAL', () => {
  test('GET / is public and links every collection, health and the problem catalogue', async () => {
    const res = await call(api.app, '/', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/hal\+json/);
    expect(Object.keys(res.body._links)).toEqual(
      expect.arrayContaining([
        'self',
        'users',
        'items',
        'orders',
        'tasks',
        'task-types',
        'subscriptions',
        'health',
        'problems',
      ]),
    );
    expect(res.body._links.orders).toEqual({ href: '/orders' });
  });

  test('a resource links itself, its collection and its relations (a to-many one as an array)', async () => {
    const id = await createOrder();
    const res = await call(api.app, `/orders/${id}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/hal\+json/);
    expect(res.body._links).toEqual({
      self: { href: `/orders/${id}` },
      collection: { href: '/orders' },
      author: { href: '/users/u-ada' },
      items: [{ href: '/items/i-widget' }],
    });
    expect(res.body).toMatchObject({ id, orderNumber: 7, itemCount: 2, status: 'open' });
    expect(res.body._embedded).toBeUndefined();
  });

  test('every href is relative to the API root and none ends in /, also when asked with a trailing slash', async () => {
    for (const path of ['/', '/orders/', '/orders?limit=1', '/tasks', '/subscriptions']) {
      const res = await call(api.app, path);
      expect(res.status).toBe(200);
      for (const href of hrefsOf(res.body._links)) {
        expect(href).toMatch(/^\//);
        if (href !== '/') expect(href).not.toMatch(/\/$/);
      }
    }
  });

  test('a collection is paged: count, total, item links, next and prev', async () => {
    const first = await call(api.app, '/items?limit=2');
    expect(first.body).toMatchObject({ count: 2, total: 3 });
    expect(first.body._links.item).toHaveLength(2);
    expect(first.body._links.next.href).toMatch(/^\/items\?.*offset=2/);
    expect(first.body._links.prev).toBeUndefined();
    const second = await call(api.app, first.body._links.next.href);
    expect(second.body).toMatchObject({ count: 1, total: 3 });
    expect(second.body._links.prev.href).toMatch(/^\/items\?.*offset=0/);
    expect(second.body._links.next).toBeUndefined();
  });
});

describe('fields and embedded', () => {
  let id: string;
  beforeAll(async () => {
    id = await createOrder({ ...newOrder, orderNumber: 8 });
  });

  test('fields keeps only the listed top-level fields; unknown names are ignored', async () => {
    const res = await call(api.app, `/orders/${id}?fields=itemCount,status,nosuchfield`);
    expect(res.body).toEqual({ itemCount: 2, status: 'open' });
  });

  test('_links is selectable like a field, and the default keeps it', async () => {
    expect(Object.keys((await call(api.app, `/orders/${id}?fields=_links`)).body)).toEqual(['_links']);
    expect((await call(api.app, `/orders/${id}`)).body._links.self.href).toBe(`/orders/${id}`);
  });

  test('embedded (or its alias embed) places the listed relations under _embedded, and only those', async () => {
    for (const param of ['embedded', 'embed']) {
      const res = await call(api.app, `/orders/${id}?${param}=author,nosuchrelation`);
      expect(Object.keys(res.body._embedded)).toEqual(['author']);
      expect(res.body._embedded.author).toMatchObject({
        id: 'u-ada',
        name: 'Ada Lovelace',
        _links: { self: { href: '/users/u-ada' } },
      });
    }
    const both = await call(api.app, `/orders/${id}?embedded=author,items`);
    expect(both.body._embedded.items.map((i: { id: string }) => i.id)).toEqual(['i-widget']);
    // Given both names, the relations of both are embedded.
    const mixed = await call(api.app, `/orders/${id}?embedded=author&embed=items`);
    expect(Object.keys(mixed.body._embedded).sort()).toEqual(['author', 'items']);
  });

  test('embedding comes first, then fields: _embedded is selectable', async () => {
    const res = await call(api.app, `/orders/${id}?embedded=author&fields=_embedded,orderNumber`);
    expect(Object.keys(res.body).sort()).toEqual(['_embedded', 'orderNumber']);
    expect(res.body._embedded.author.id).toBe('u-ada');
  });

  test('next and prev keep the selection, so every page has the representation asked for; self stays the page', async () => {
    const first = await call(api.app, '/items?limit=2&fields=_links,count,_embedded&embed=items');
    expect(first.body._links.self.href).toBe('/items?offset=0&limit=2');
    const next = first.body._links.next.href as string;
    expect(new URL(next, 'http://x').searchParams.getAll('fields')).toEqual(['_links,count,_embedded']);
    const second = await call(api.app, next);
    expect(Object.keys(second.body).sort()).toEqual(['_embedded', '_links', 'count']);
    expect(second.body.count).toBe(1);
    const back = new URL(second.body._links.prev.href, 'http://x').searchParams;
    expect([back.get('offset'), back.get('fields'), back.get('embed')]).toEqual([
      '0',
      '_links,count,_embedded',
      'items',
    ]);
    // Without a selection the links are as before.
    expect((await call(api.app, '/items?limit=2')).body._links.next.href).toBe('/items?offset=2&limit=2');
  });

  test('a list embeds its members by default; fields=_links,count drops them', async () => {
    const full = await call(api.app, '/items');
    expect(full.body._embedded.items).toHaveLength(3);
    const lean = await call(api.app, '/items?fields=_links,count');
    expect(lean.body).toEqual({ _links: expect.any(Object), count: 3 });
  });

  test('selection applies to the bodies of POST, PUT and PATCH too', async () => {
    const created = await call(api.app, '/orders?fields=status', { body: { ...newOrder, orderNumber: 9 } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ status: 'open' });
    const replaced = await call(api.app, `/orders/${id}?fields=itemCount`, {
      method: 'PUT',
      body: { orderNumber: 8, itemCount: 5, status: 'open' },
    });
    expect(replaced.body).toEqual({ itemCount: 5 });
    const patched = await call(api.app, `/orders/${id}?fields=status`, {
      method: 'PATCH',
      body: { status: 'shipped' },
    });
    expect(patched.body).toEqual({ status: 'shipped' });
  });

  test('selection never applies to a Problem', async () => {
    const res = await call(api.app, '/orders/does-not-exist?fields=nothing');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ type: problemType('not-found'), status: 404, title: 'Not found' });
  });
});

describe('Problem Details', () => {
  const isProblem = (res: { headers: Record<string, unknown>; body: Record<string, unknown> }, status: number) => {
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, type: expect.stringMatching(/^https:\/\//), title: expect.any(String) });
    expect(res.body.detail).toEqual(expect.any(String));
    expect(res.body.logref).toBe(res.headers['x-request-id']);
    expect(res.body).not.toHaveProperty('stack');
  };

  test('400: each offending field is an errors[] entry whose instance is a JSON pointer', async () => {
    const res = await call(api.app, '/orders', { body: { orderNumber: 'one', itemCount: -100, status: 'open' } });
    expect(res.status).toBe(400);
    isProblem(res, 400);
    expect(res.body).toMatchObject({ type: problemType('validation-failed'), instance: '/orders' });
    const pointers = res.body.errors.map((e: { instance: string }) => e.instance).sort();
    expect(pointers).toEqual(['/itemCount', '/orderNumber']);
    for (const e of res.body.errors) expect(e).toMatchObject({ type: expect.any(String), detail: expect.any(String) });
  });

  test('400: itemCount must be a positive integer (0, 1.5, "42" and null are each refused)', async () => {
    for (const itemCount of [0, 1.5, '42', null]) {
      const res = await call(api.app, '/orders', { body: { ...newOrder, itemCount } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/itemCount']);
    }
  });

  test('400: a relation naming a missing resource is an error for that field, a to-many one by index', async () => {
    const res = await call(api.app, '/orders', {
      body: { ...newOrder, author: 'u-nobody', items: ['i-widget', 'i-none'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/author', '/items/1']);
  });

  test('400: relation errors come with the schema errors in one answer, on POST, PUT and PATCH alike', async () => {
    const pointers = async (path: string, method: 'POST' | 'PUT' | 'PATCH', body: unknown) => {
      const res = await call(api.app, path, { method, body });
      expect(res.status).toBe(400);
      return res.body.errors.map((e: { instance: string }) => e.instance).sort();
    };
    const bad = { orderNumber: 1, itemCount: 0, status: 'x', author: 'u-nope' };
    expect(await pointers('/orders', 'POST', bad)).toEqual(['/author', '/itemCount']);
    const id = await createOrder();
    expect(await pointers(`/orders/${id}`, 'PUT', bad)).toEqual(['/author', '/itemCount']);
    expect(await pointers(`/orders/${id}`, 'PATCH', { itemCount: 0, author: 'u-nope' })).toEqual([
      '/author',
      '/itemCount',
    ]);
    // A relation the schema refuses is reported once, by the schema; the others are still looked up.
    expect(await pointers('/orders', 'POST', { ...bad, author: 5, items: ['i-none'] })).toEqual([
      '/author',
      '/itemCount',
      '/items/0',
    ]);
    const bulk = await call(api.app, '/orders', { body: { order: [bad] } });
    expect(bulk.body.errors[0].errors.map((e: { instance: string }) => e.instance).sort()).toEqual([
      '/author',
      '/itemCount',
    ]);
  });

  test('400: a body that is not JSON, or not an object', async () => {
    const malformed = await call(api.app, '/orders', {
      raw: '{"orderNumber":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    isProblem(malformed, 400);
    expect(malformed.body.type).toBe(problemType('malformed-body'));
    const array = await call(api.app, '/orders', { body: [newOrder] });
    expect(array.status).toBe(400);
    isProblem(array, 400);
  });

  test('400: a bad query parameter is reported with a pointer into the query', async () => {
    const res = await call(api.app, '/orders?limit=zero');
    expect(res.status).toBe(400);
    isProblem(res, 400);
    expect(res.body.errors[0].instance).toMatch(/^\/querystring\/limit/);
  });

  test('401: no key is a Problem with WWW-Authenticate: Bearer; a wrong key says invalid_token', async () => {
    const none = await call(api.app, '/orders', { key: null });
    expect(none.status).toBe(401);
    isProblem(none, 401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    const wrong = await call(api.app, '/orders', { key: 'key-of-nobody-0123456789' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    const basic = await call(api.app, '/orders', { key: null, headers: { authorization: 'Basic dXNlcjpwdw==' } });
    expect(basic.status).toBe(401);
    // Another scheme is no Bearer token: no error code (RFC 6750 3.1).
    expect(basic.headers['www-authenticate']).toBe('Bearer');
    // Which of two keys would count is a guess: refused, even when one of them is valid.
    const twice = await call(api.app, '/orders', {
      key: null,
      headers: { authorization: [`Bearer ${TENANT_A_KEY}`, 'Bearer key-of-nobody-0123456789'] },
    });
    expect(twice.status).toBe(401);
    expect(twice.headers['www-authenticate']).toBe('Bearer error="invalid_request"');
  });

  test('401 protects every API route; root, health, task types and the problem catalogue are public', async () => {
    for (const path of ['/orders', '/tasks', '/subscriptions', '/users/u-ada']) {
      expect((await call(api.app, path, { key: null })).status).toBe(401);
    }
    for (const path of ['/', '/health/live', '/task-types', '/docs/problems']) {
      expect((await call(api.app, path, { key: null })).status).toBe(200);
    }
  });

  test('GET /health is public: the readiness answer, linking both probes', async () => {
    const health = await call(api.app, '/health', { key: null });
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({
      status: 'ready',
      checks: { kafka: 'up', views: 'caught-up' },
      _links: { self: { href: '/health' }, live: { href: '/health/live' }, ready: { href: '/health/ready' } },
    });
  });

  test('404: an unknown path and an unknown id are Problems with instance = the path', async () => {
    const path = await call(api.app, '/nowhere?x=1');
    expect(path.status).toBe(404);
    isProblem(path, 404);
    expect(path.body.instance).toBe('/nowhere');
    const id = await call(api.app, '/orders/no-such-order');
    expect(id.status).toBe(404);
    expect(id.body.instance).toBe('/orders/no-such-order');
  });

  test('405: an unsupported method on a known path names the allowed ones in Allow', async () => {
    const res = await call(api.app, '/orders', { method: 'DELETE' });
    expect(res.status).toBe(405);
    isProblem(res, 405);
    const allow = String(res.headers.allow).split(', ');
    expect(allow).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'OPTIONS']));
    expect(allow).not.toContain('DELETE');
    const item = await call(api.app, '/orders/some-id', { method: 'POST', body: newOrder });
    expect(item.status).toBe(405);
    expect(String(item.headers.allow).split(', ')).toEqual(expect.arrayContaining(['GET', 'PUT', 'PATCH', 'DELETE']));
  });

  test('406: an Accept that allows none of our types; a wildcard or HAL is fine', async () => {
    const res = await call(api.app, '/orders', { headers: { accept: 'text/csv' } });
    expect(res.status).toBe(406);
    isProblem(res, 406);
    expect((await call(api.app, '/orders', { headers: { accept: 'application/json;q=0, text/html' } })).status).toBe(
      406,
    );
    for (const accept of ['*/*', 'application/hal+json', 'text/html, application/*;q=0.2']) {
      expect((await call(api.app, '/orders', { headers: { accept } })).status).toBe(200);
    }
  });

  test('415: a body that is not JSON; merge patch is accepted for PATCH only', async () => {
    const xml = await call(api.app, '/orders', { raw: '<order/>', headers: { 'content-type': 'application/xml' } });
    expect(xml.status).toBe(415);
    isProblem(xml, 415);
    const mergeOnPost = await call(api.app, '/orders', {
      body: newOrder,
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(mergeOnPost.status).toBe(415);
    const id = await createOrder();
    const mergeOnPatch = await call(api.app, `/orders/${id}`, {
      method: 'PATCH',
      body: { status: 'packed' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    expect(mergeOnPatch.status).toBe(200);
  });

  test('415 to a PATCH says in Accept-Patch what a patch may be (RFC 5789 §2.2); OPTIONS of a PATCH path too', async () => {
    const id = await createOrder();
    for (const url of [`/orders/${id}`, '/orders']) {
      const jsonPatch = await call(api.app, url, {
        method: 'PATCH',
        raw: '[{"op":"replace","path":"/status","value":"packed"}]',
        headers: { 'content-type': 'application/json-patch+json' },
      });
      isProblem(jsonPatch, 415);
      expect(jsonPatch.headers['accept-patch']).toBe(
        'application/merge-patch+json, application/json, application/hal+json',
      );
      const options = await call(api.app, url, { method: 'OPTIONS' });
      expect(options.headers['accept-patch']).toBe(jsonPatch.headers['accept-patch']);
    }
    // Not on what takes no PATCH.
    const xml = await call(api.app, '/orders', { raw: '<order/>', headers: { 'content-type': 'application/xml' } });
    expect(xml.headers['accept-patch']).toBeUndefined();
    expect((await call(api.app, '/task-types', { method: 'OPTIONS' })).headers['accept-patch']).toBeUndefined();
  });

  test('413: a body over the limit', async () => {
    const res = await call(api.app, '/orders', { body: { ...newOrder, status: 'x'.repeat(70 * 1024) } });
    expect(res.status).toBe(413);
    isProblem(res, 413);
  });
});

describe('If-Match (RFC 9110 §13.1.1): no entity tag is issued, so only * can match', () => {
  test('any other If-Match on PUT, PATCH or DELETE is a 412 Problem and changes nothing', async () => {
    const id = await createOrder();
    const before = api.kafka.publisher.published.length;
    const changes = [
      { method: 'PUT' as const, body: { ...newOrder, status: 'packed' } },
      { method: 'PATCH' as const, body: { status: 'packed' } },
      { method: 'DELETE' as const },
    ];
    for (const ifMatch of ['"v1"', 'W/"v1"', '"a", "b"']) {
      for (const change of changes) {
        const res = await call(api.app, `/orders/${id}`, { ...change, headers: { 'if-match': ifMatch } });
        expect(res.status).toBe(412);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({ type: problemType('precondition-failed'), status: 412 });
      }
    }
    expect(api.kafka.publisher.published.length).toBe(before);
    expect((await call(api.app, `/orders/${id}`)).body.status).not.toBe('packed');
  });

  test('If-None-Match: * on PUT, PATCH or DELETE of an existing resource is 412; a list of tags goes on', async () => {
    const id = await createOrder();
    const before = api.kafka.publisher.published.length;
    for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
      const body = method === 'DELETE' ? undefined : { ...newOrder, status: 'packed' };
      const res = await call(api.app, `/orders/${id}`, { method, body, headers: { 'if-none-match': '*' } });
      expect([method, res.status, res.body.type]).toEqual([method, 412, problemType('precondition-failed')]);
    }
    expect(api.kafka.publisher.published.length).toBe(before);
    const tags = { 'if-none-match': '"v1", W/"v2"' };
    const patched = await call(api.app, `/orders/${id}`, {
      method: 'PATCH',
      body: { status: 'packed' },
      headers: tags,
    });
    expect([patched.status, patched.body.status]).toEqual([200, 'packed']);
    const missing = { method: 'DELETE' as const, headers: { 'if-none-match': '*' } };
    expect((await call(api.app, '/orders/no-such-order', missing)).status).toBe(404);
  });

  test('If-Match: * matches a resource that exists; a missing one is still 404', async () => {
    const id = await createOrder();
    const star = { 'if-match': '*' };
    expect(
      (await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { status: 'packed' }, headers: star })).status,
    ).toBe(200);
    expect((await call(api.app, `/orders/${id}`, { method: 'DELETE', headers: star })).status).toBe(204);
    for (const ifMatch of ['*', '"v1"']) {
      const gone = await call(api.app, `/orders/${id}`, { method: 'DELETE', headers: { 'if-match': ifMatch } });
      expect(gone.status).toBe(404);
    }
  });
});

describe('If-Match on tasks, subscriptions and a bulk PATCH', () => {
  test('any value but * is 412 there too, and nothing is written; * matches', async () => {
    const task = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(task.status).toBe(202);
    const id = await createOrder();
    const before = api.kafka.publisher.published.length;
    const v1 = { 'if-match': '"v1"' };
    const cancel = { method: 'PATCH' as const, body: { status: 'cancelled' }, headers: v1 };
    expect((await call(api.app, `/tasks/${task.body.taskId}`, cancel)).status).toBe(412);
    expect((await call(api.app, `/tasks/${task.body.taskId}`, { method: 'DELETE', headers: v1 })).status).toBe(412);
    const bulk = { order: [{ _links: { self: { href: `/orders/${id}` } }, status: 'packed' }] };
    expect((await call(api.app, '/orders', { method: 'PATCH', body: bulk, headers: v1 })).status).toBe(412);
    expect(api.kafka.publisher.published.length).toBe(before);
    const star = { 'if-match': '*' };
    expect((await call(api.app, '/orders', { method: 'PATCH', body: bulk, headers: star })).status).toBe(200);
    const cancelled = await call(api.app, `/tasks/${task.body.taskId}`, { ...cancel, headers: star });
    expect(cancelled.status).toBe(202);
  });

  test('a subscription cancelled with an If-Match other than * is not cancelled', async () => {
    const tolerant = await inMemoryApi({ allowPrivate: true });
    try {
      const body = { callbackUrl: 'http://127.0.0.1:9/hook', mode: 'continuous', events: ['task.succeeded'] };
      const created = await call(tolerant.app, '/subscriptions', { body });
      expect(created.status).toBe(201);
      const path = `/subscriptions/${created.body.UUID}`;
      expect((await call(tolerant.app, path, { method: 'PUT', headers: { 'if-match': '"v1"' } })).status).toBe(412);
      expect((await call(tolerant.app, path)).body.status).not.toBe('cancelled');
      expect((await call(tolerant.app, path, { method: 'PUT', headers: { 'if-match': '*' } })).status).toBe(202);
    } finally {
      await tolerant.app.close();
    }
  });
});

describe('OpenAPI wording', () => {
  test('a resource is named with its article: "An order", "A user"', async () => {
    const doc = (await call(api.app, '/openapi.json', { key: null })).text;
    const descriptions = /"description":"(An? \w+) of \/\w+\."/g;
    expect([...doc.matchAll(descriptions)].map((m) => m[1]).sort()).toEqual(['A user', 'An item', 'An order']);
  });
});

describe('methods', () => {
  test('OPTIONS answers 204 with Allow and changes nothing', async () => {
    const before = api.kafka.publisher.published.length;
    const res = await call(api.app, '/orders', { method: 'OPTIONS' });
    expect(res.status).toBe(204);
    expect(String(res.headers.allow).split(', ')).toEqual(expect.arrayContaining(['GET', 'POST', 'PATCH', 'OPTIONS']));
    expect(api.kafka.publisher.published.length).toBe(before);
  });

  test('a method a path does not take is 405 with Allow, whatever its body; an unknown path 404', async () => {
    // The answer depends on the method and path only: the body is never read as JSON, so bad JSON is no 400.
    const cases: [NonNullable<Call['method']>, string, Record<string, string>, string | undefined, number][] = [
      ['POST', '/', { 'content-type': 'application/json' }, '{', 405],
      ['PUT', '/orders', { 'content-type': 'application/json' }, '{"__proto__":1}', 405],
      ['DELETE', '/orders', { 'content-type': 'application/json' }, '{', 405],
      ['POST', '/nowhere', { 'content-type': 'application/json' }, '{', 404],
      ['PUT', '/orders', { 'content-type': 'no/such/type' }, 'x', 405],
      // RFC 10008 asks a QUERY to name its Content-Type; a path that takes no QUERY says so first.
      ['QUERY', '/orders', {}, undefined, 405],
      ['QUERY', '/nowhere', {}, undefined, 404],
    ];
    for (const [method, url, headers, raw, status] of cases) {
      const res = await call(api.app, url, { method, headers, raw });
      expect([method, url, res.status, res.body?.status]).toEqual([method, url, status, status]);
      if (status === 405) expect(String(res.headers.allow)).toMatch(/GET/);
    }
  });

  test('OPTIONS answers Allow whatever the Accept or the body: a 204 has nothing to negotiate', async () => {
    const refusing = await call(api.app, '/orders', { method: 'OPTIONS', headers: { accept: 'text/csv' } });
    expect([refusing.status, String(refusing.headers.allow)]).toEqual([204, expect.stringMatching(/POST/)]);
    const headers = { 'content-type': 'application/json' };
    const withBody = await call(api.app, '/orders', { method: 'OPTIONS', headers, raw: '{' });
    expect([withBody.status, String(withBody.headers.allow)]).toEqual([204, expect.stringMatching(/POST/)]);
  });

  test('HEAD answers the headers of GET without a body', async () => {
    const res = await call(api.app, '/orders', { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/hal\+json/);
    expect(res.text).toBe('');
  });

  test('POST creates one: 201, Location, and the write is readable at once', async () => {
    const res = await call(api.app, '/orders', { body: newOrder });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/orders/${res.body.id}`);
    expect((await call(api.app, String(res.headers.location))).body).toMatchObject({ orderNumber: 7 });
  });

  test('PUT replaces in full: fields left out are gone, and repeating it gives the same state', async () => {
    const id = await createOrder();
    const replacement = { orderNumber: 70, itemCount: 3, status: 'packed' };
    const once = await call(api.app, `/orders/${id}`, { method: 'PUT', body: replacement });
    expect(once.status).toBe(200);
    expect(once.body).toMatchObject(replacement);
    expect(once.body._links.author).toBeUndefined();
    const twice = await call(api.app, `/orders/${id}`, { method: 'PUT', body: replacement });
    const strip = (b: Record<string, unknown>) => ({ ...b, updatedAt: undefined });
    expect(strip(twice.body)).toEqual(strip(once.body));
  });

  test('PUT takes back what GET gave, changed: relations from _links, server fields ignored', async () => {
    const id = await createOrder();
    const got = (await call(api.app, `/orders/${id}?embedded=author`)).body;
    const res = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...got, status: 'packed' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'packed', orderNumber: 7, createdAt: got.createdAt });
    expect(res.body._links.author).toEqual({ href: '/users/u-ada' });
    expect(res.body._links.items).toEqual([{ href: '/items/i-widget' }]);
    // A relation given as a field wins over the link that came with the representation.
    const moved = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...got, author: 'u-grace' } });
    expect([moved.status, moved.body._links.author]).toEqual([200, { href: '/users/u-grace' }]);
  });

  test('PUT of a representation cut down by fields (no _links, no id): its server fields are ignored too', async () => {
    const id = await createOrder();
    const fields = 'orderNumber,itemCount,status,author,items,createdAt,updatedAt';
    const got = (await call(api.app, `/orders/${id}?fields=${fields}&embedded=author`)).body;
    expect(got).toHaveProperty('createdAt');
    expect(got).not.toHaveProperty('_links');
    const res = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...got, status: 'packed' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'packed', createdAt: got.createdAt });
  });

  test('PATCH takes back what GET gave, edited, as PUT and a bulk PATCH do; a changed link or id is 400', async () => {
    const id = await createOrder();
    const got = (await call(api.app, `/orders/${id}`)).body;
    const patched = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { ...got, status: 'packed' } });
    expect([patched.status, patched.body.status, patched.body.createdAt]).toEqual([200, 'packed', got.createdAt]);
    expect(patched.body._links).toEqual(got._links);
    const refused = [
      [{ _links: { ...got._links, author: { href: '/users/u-grace' } } }, '/_links/author'],
      [{ _links: { self: { href: '/orders/someone-else' } } }, '/_links/self/href'],
      [{ id: 'someone-else' }, '/id'],
      [{ _links: 'x' }, '/_links'],
    ] as const;
    for (const [body, pointer] of refused) {
      const res = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { ...body, status: 'lost' } });
      expect([pointer, res.status, res.body.errors?.map((e: { instance: string }) => e.instance)]).toEqual([
        pointer,
        400,
        [pointer],
      ]);
    }
    expect((await call(api.app, `/orders/${id}`)).body.status).toBe('packed');
  });

  test('PUT of a representation naming another resource is 400 and changes nothing', async () => {
    const id = await createOrder();
    const other = await createOrder({ ...newOrder, orderNumber: 71 });
    const got = (await call(api.app, `/orders/${other}`)).body;
    const byId = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...got, _links: undefined } });
    expect(byId.status).toBe(400);
    expect(byId.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/id']);
    const bySelf = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...got, id } });
    expect(bySelf.status).toBe(400);
    expect(bySelf.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/_links/self/href']);
    expect((await call(api.app, `/orders/${id}`)).body.orderNumber).toBe(7);
    // Links that are no links of ours are refused, never dropped (dropping one would remove the relation).
    const bad = [
      [{ ...got, id, _links: 'x' }, '/_links'],
      [{ ...got, id, _links: { author: { href: 'https://elsewhere.example/users/u-ada' } } }, '/_links/author'],
      [{ ...got, id, _links: { items: { href: '/items/i-widget' } } }, '/_links/items'],
      [{ ...got, id, _links: { items: [null] } }, '/_links/items'],
      [{ ...got, id, _links: { author: [{ href: '/users/u-ada' }] } }, '/_links/author'],
      [{ ...got, id, _links: { author: { href: '/items/i-widget' } } }, '/_links/author'],
    ] as const;
    for (const [body, pointer] of bad) {
      const res = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...body, author: undefined } });
      expect([pointer, res.status, res.body.errors?.map((e: { instance: string }) => e.instance)]).toEqual([
        pointer,
        400,
        [pointer],
      ]);
    }
    const absolute = { ...got, id, _links: { author: { href: 'http://localhost:80/users/u-grace' } } };
    const put = await call(api.app, `/orders/${id}`, {
      method: 'PUT',
      body: absolute,
      headers: { host: 'localhost:80' },
    });
    expect([put.status, put.body._links?.author]).toEqual([200, { href: '/users/u-grace' }]);
    // The 404 of a missing resource comes first, as without the body.
    expect((await call(api.app, '/orders/no-such-order', { method: 'PUT', body: got })).status).toBe(404);
  });

  test('PUT: an error in a relation taken from _links points at the link sent, not at a field never sent', async () => {
    const id = await createOrder();
    const got = (await call(api.app, `/orders/${id}`)).body;
    const put = async (body: unknown) => {
      const res = await call(api.app, `/orders/${id}`, { method: 'PUT', body });
      expect(res.status).toBe(400);
      return res.body.errors.map((e: { instance: string; detail: string }) => [e.instance, e.detail.split(' ')[0]]);
    };
    const relinked = (links: object) => ({ ...got, _links: { ...got._links, ...links } });
    const missing = relinked({
      author: { href: '/users/u-nobody' },
      items: [{ href: '/items/i-widget' }, { href: '/items/i-none' }],
    });
    expect(await put(missing)).toEqual([
      ['/_links/author/href', '/_links/author/href'],
      ['/_links/items/1/href', '/_links/items/1/href'],
    ]);
    // What the schema refuses in a link's href is pointed at there too.
    expect(await put(relinked({ author: { href: '/users/no such user' } }))).toEqual([
      ['/_links/author/href', '/_links/author/href'],
    ]);
    // A relation sent as a field is pointed at as that field.
    expect(await put({ ...got, author: 'u-nobody' })).toEqual([['/author', '/author']]);
    expect((await call(api.app, `/orders/${id}`)).body._links.author).toEqual({ href: '/users/u-ada' });
  });

  test('PUT with a partial body is 400 and changes nothing; PUT never creates (404)', async () => {
    const id = await createOrder();
    const partial = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { status: 'packed' } });
    expect(partial.status).toBe(400);
    expect(partial.body.errors.map((e: { instance: string }) => e.instance)).toEqual(
      expect.arrayContaining(['/orderNumber', '/itemCount']),
    );
    expect((await call(api.app, `/orders/${id}`)).body.status).toBe('open');
    const missing = await call(api.app, '/orders/no-such-order', { method: 'PUT', body: newOrder });
    expect(missing.status).toBe(404);
  });

  test('PATCH is a JSON merge patch: listed fields change, null removes, the rest stays', async () => {
    const id = await createOrder();
    const res = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { status: 'shipped', author: null } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'shipped', orderNumber: 7, itemCount: 2 });
    expect(res.body._links.author).toBeUndefined();
    expect(res.body._links.items).toEqual([{ href: '/items/i-widget' }]);
  });

  test('a PATCH that would make the resource invalid is 400 and changes nothing', async () => {
    const id = await createOrder();
    const published = api.kafka.publisher.published.length;
    const res = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { itemCount: 0 } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].instance).toBe('/itemCount');
    expect(api.kafka.publisher.published.length).toBe(published);
    expect((await call(api.app, `/orders/${id}`)).body.itemCount).toBe(2);
  });

  test('a link to a deleted resource stays: updates that keep it succeed, a new link must exist', async () => {
    const user = await call(api.app, '/users', { body: { name: 'Grace' } });
    expect(user.status).toBe(201);
    const id = await createOrder({ ...newOrder, author: user.body.id });
    expect((await call(api.app, `/users/${user.body.id}`, { method: 'DELETE' })).status).toBe(204);
    const patched = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { status: 'shipped' } });
    expect(patched.status).toBe(200);
    expect(patched.body._links.author.href).toBe(`/users/${user.body.id}`);
    const bulk = await call(api.app, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: { self: { href: `/orders/${id}` } }, status: 'closed' }] },
    });
    expect(bulk.status).toBe(200);
    const put = await call(api.app, `/orders/${id}`, { method: 'PUT', body: { ...newOrder, author: user.body.id } });
    expect(put.status).toBe(200);
    const moved = await call(api.app, `/orders/${id}`, { method: 'PATCH', body: { author: 'u-nobody' } });
    expect(moved.status).toBe(400);
    expect(moved.body.errors[0].instance).toBe('/author');
  });

  test('DELETE removes: 204, then 404, and a repeat is 404', async () => {
    const id = await createOrder();
    expect((await call(api.app, `/orders/${id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await call(api.app, `/orders/${id}`)).status).toBe(404);
    expect((await call(api.app, `/orders/${id}`, { method: 'DELETE' })).status).toBe(404);
  });

  test('X-HTTP-Method-Override is ignored: a POST stays a POST', async () => {
    const res = await call(api.app, '/orders', { body: newOrder, headers: { 'x-http-method-override': 'DELETE' } });
    expect(res.status).toBe(201);
    expect((await call(api.app, `/orders/${res.body.id}`)).status).toBe(200);
  });

  test('every write is one transaction with its domain event', async () => {
    const before = api.kafka.publisher.published.length;
    const id = await createOrder();
    const written = api.kafka.publisher.published.slice(before);
    expect(written.map((r) => r.topic)).toEqual([api.kafka.topics.resources, api.kafka.topics.domainEvents]);
    expect(written[1].headers).toMatchObject({ ce_type: 'order.created', ce_subject: `/orders/${id}` });
  });
});
