import { MAX_FIELD_ERRORS } from '../../src/problems/problem-detail';
import { problemType } from '../../src/problems/problem-types';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/* Bulk create and update over in-memory Kafka: all or none in one transaction, per-element errors otherwise. */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

const order = (itemCount: unknown, orderNumber = 1) => ({ orderNumber, itemCount, status: 'open' });
const total = () => api.resources.count('orders');
const transactions = () => api.kafka.publisher.published.length;

describe('bulk create', () => {
  test('spec example: itemCount 42 and -100 fails as a whole, one errors[] entry per failed element', async () => {
    const before = total();
    const res = await call(api.app, '/orders', { body: { order: [order(42), order(-100)] } });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.type).toBe(problemType('bulk-failed'));
    expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/orders/1', status: 400 })]);
    expect(res.body.errors[0].errors[0].instance).toBe('/itemCount');
    expect(total()).toBe(before);
  });

  test('all valid: 201 listing them under _embedded, written in one publish', async () => {
    const before = total();
    const publishes = jest.spyOn(api.kafka.publisher, 'publish');
    try {
      const res = await call(api.app, '/orders', { body: { order: [order(1, 10), order(2, 11), order(3, 12)] } });
      expect(res.status).toBe(201);
      expect(res.body._embedded.orders.map((o: { orderNumber: number }) => o.orderNumber)).toEqual([10, 11, 12]);
      expect(res.body.count).toBe(3);
      expect(publishes).toHaveBeenCalledTimes(1);
      expect(total()).toBe(before + 3);
    } finally {
      publishes.mockRestore();
    }
  });

  test('a malformed bulk body is a 400 with pointers', async () => {
    const empty = await call(api.app, '/orders', { body: { order: [] } });
    expect(empty.status).toBe(400);
    expect(empty.body.errors[0].instance).toBe('/order');
    const extra = await call(api.app, '/orders', { body: { order: [order(1)], note: 'x' } });
    expect(extra.status).toBe(400);
    expect(extra.body.errors[0].instance).toBe('/note');
    expect((await call(api.app, '/orders?atomic=maybe', { body: { order: [order(1)] } })).status).toBe(400);
    // A bulk PATCH under the collection's name: both the member missing and the one sent are named.
    const misnamed = await call(api.app, '/orders', { method: 'PATCH', body: { orders: [order(1)] } });
    const pointers = misnamed.body.errors.map((e: { instance: string }) => e.instance);
    expect([misnamed.status, pointers]).toEqual([400, ['/order', '/orders']]);
  });

  test('non-atomic on opt-in: the valid elements are created, the failure reported with processed', async () => {
    const before = total();
    const res = await call(api.app, '/orders?atomic=false', { body: { order: [order(5, 30), order(0, 31)] } });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('bulk-partially-failed'));
    expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/orders/1']);
    expect(res.body.processed._embedded.orders.map((o: { orderNumber: number }) => o.orderNumber)).toEqual([30]);
    expect(total()).toBe(before + 1);
  });

  test("processed is shaped as the 2xx would be: the request's fields apply to it", async () => {
    const ok = await call(api.app, '/orders?atomic=false&fields=count,_links', { body: { order: [order(5, 40)] } });
    expect(ok.status).toBe(201);
    expect(Object.keys(ok.body).sort()).toEqual(['_links', 'count']);
    const partly = await call(api.app, '/orders?atomic=false&fields=count,_links', {
      body: { order: [order(5, 41), order(0, 42)] },
    });
    expect(partly.status).toBe(400);
    expect(Object.keys(partly.body.processed).sort()).toEqual(['_links', 'count']);
    expect(partly.body.processed.count).toBe(1);
  });

  test('the answer links each resource it wrote (item, in order), also when _embedded is not selected', async () => {
    const res = await call(api.app, '/orders?embedded=', { body: { order: [order(1, 50), order(2, 51)] } });
    expect(res.status).toBe(201);
    expect(res.body._embedded).toBeUndefined();
    const hrefs: string[] = res.body._links.item.map((l: { href: string }) => l.href);
    expect(hrefs).toHaveLength(2);
    const numbers = await Promise.all(hrefs.map(async (href) => (await call(api.app, href)).body.orderNumber));
    expect(numbers).toEqual([50, 51]);
    const update = { order: hrefs.map((href) => ({ _links: { self: { href } }, status: 'packed' })) };
    const patched = await call(api.app, '/orders?fields=_links', { method: 'PATCH', body: update });
    expect([patched.status, patched.body]).toEqual([
      200,
      { _links: { self: { href: '/orders' }, item: hrefs.map((href) => ({ href })) } },
    ]);
  });
});

describe('bulk failure size', () => {
  test("three hundred bad elements: every element listed, their field errors capped in all as one body's are", async () => {
    const bad = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`k${i}`, 0]));
    const body = { order: Array.from({ length: 300 }, () => bad) };
    const res = await call(api.app, '/orders', { body });
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(300);
    const nested = res.body.errors.reduce((n: number, e: { errors?: unknown[] }) => n + (e.errors?.length ?? 0), 0);
    expect(nested).toBeLessThanOrEqual(MAX_FIELD_ERRORS);
    expect(res.body.errors[299]).toMatchObject({ instance: '/orders/299', status: 400 });
    expect(res.body.errors[299].detail).toMatch(/field error\(s\) are not listed/);
    expect(res.text.length).toBeLessThan(200_000);
  });
});

describe('bulk update (PATCH /orders)', () => {
  async function created(...numbers: number[]): Promise<{ id: string; _links: { self: { href: string } } }[]> {
    const res = await call(api.app, '/orders', { body: { order: numbers.map((n) => order(1, n)) } });
    expect(res.status).toBe(201);
    return res.body._embedded.orders;
  }

  test('two elements naming one resource: 400 for the later one, nothing written; non-atomic keeps the first', async () => {
    const [a] = await created(45);
    const twice = {
      order: [
        { _links: a._links, status: 'dupA' },
        { _links: a._links, status: 'dupB' },
      ],
    };
    const res = await call(api.app, '/orders', { method: 'PATCH', body: twice });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('bulk-failed'));
    expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/orders/1', status: 400 })]);
    expect(res.body.errors[0].detail).toMatch(/same order as element 0/);
    expect((await call(api.app, a._links.self.href)).body.status).toBe('open');
    const partly = await call(api.app, '/orders?atomic=false', { method: 'PATCH', body: twice });
    expect(partly.body.processed._embedded.orders.map((o: { status: string }) => o.status)).toEqual(['dupA']);
    expect((await call(api.app, a._links.self.href)).body.status).toBe('dupA');
  });

  test('every listed resource is merge-patched, all in one write', async () => {
    const [a, b] = await created(40, 41);
    const res = await call(api.app, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: a._links, status: 'shipped' },
          { _links: b._links, itemCount: 9 },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(
      res.body._embedded.orders.map((o: { status: string; itemCount: number }) => [o.status, o.itemCount]),
    ).toEqual([
      ['shipped', 1],
      ['open', 9],
    ]);
  });

  test('one failing element changes none: 400, or 404 when every failure is a missing resource', async () => {
    const [a] = await created(50);
    const before = transactions();
    const invalid = await call(api.app, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: a._links, status: 'packed' },
          { _links: a._links, itemCount: -1 },
        ],
      },
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.errors[0]).toMatchObject({ instance: '/orders/1', status: 400 });
    const missing = await call(api.app, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: { self: { href: '/orders/no-such-order' } }, status: 'x' }] },
    });
    // Atomic: the request is refused as a whole (400, DESIGN "Bulk"); the element says what it was (404).
    expect(missing.status).toBe(400);
    expect(missing.body.errors[0]).toMatchObject({ instance: '/orders/0', status: 404 });
    expect(transactions()).toBe(before);
    expect((await call(api.app, a._links.self.href)).body.status).toBe('open');
  });

  test('an href on another host is an invalid field of its element, and nothing changes; one on ours is served', async () => {
    const [a, b] = await created(60, 61);
    const before = transactions();
    const foreign = await call(api.app, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: a._links, status: 'packed' },
          { _links: { self: { href: `http://evil.example${b._links.self.href}` } }, status: 'stolen' },
        ],
      },
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.type).toBe(problemType('bulk-failed'));
    expect(foreign.body.errors).toEqual([expect.objectContaining({ instance: '/orders/1', status: 400 })]);
    expect(foreign.body.errors[0].errors[0]).toMatchObject({
      type: problemType('invalid-field'),
      instance: '/_links/self/href',
    });
    expect(transactions()).toBe(before);
    expect((await call(api.app, b._links.self.href)).body.status).toBe('open');
    // inject's requests come to http://localhost:80: an absolute href on that origin is this service's.
    const own = await call(api.app, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: { self: { href: `http://localhost${b._links.self.href}` } }, status: 'packed' }] },
    });
    expect(own.status).toBe(200);
    expect((await call(api.app, b._links.self.href)).body.status).toBe('packed');
  });

  test('links other than self go back as GET gave them or fail their element (a change would be lost); nothing changes', async () => {
    const [a, b] = await created(70, 71);
    const before = transactions();
    const res = await call(api.app, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: a._links, status: 'packed' },
          { _links: { ...b._links, author: { href: '/users/u-ada' }, bogus: 1 }, status: 'x' },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('bulk-failed'));
    expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/orders/1', status: 400 })]);
    expect(res.body.errors[0].errors).toEqual([
      expect.objectContaining({ type: problemType('invalid-field'), instance: '/_links/author' }),
      expect.objectContaining({ type: problemType('invalid-field'), instance: '/_links/bogus' }),
    ]);
    expect(transactions()).toBe(before);
    for (const o of [a, b]) expect((await call(api.app, o._links.self.href)).body).not.toHaveProperty('author');
    expect((await call(api.app, b._links.self.href)).body.status).toBe('open');
    // A relation is a field of the element, as in a single PATCH.
    const asField = await call(api.app, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: b._links, author: '/users/u-ada' }] },
    });
    expect(asField.status).toBe(200);
    expect((await call(api.app, b._links.self.href)).body._links.author).toEqual({ href: '/users/u-ada' });
    // The links GET gave, sent back unchanged with a change of a field: only the field changes.
    const got = (await call(api.app, b._links.self.href)).body;
    const echoed = await call(api.app, '/orders', {
      method: 'PATCH',
      body: { order: [{ _links: got._links, status: 'paid' }] },
    });
    expect(echoed.status).toBe(200);
    expect((await call(api.app, b._links.self.href)).body).toMatchObject({ status: 'paid', _links: got._links });
  });

  test('non-atomic: 404 when every failure is a missing resource, and its detail says what was processed', async () => {
    const [a] = await created(90);
    const missing = { _links: { self: { href: '/orders/no-such-order' } }, status: 'x' };
    const none = await call(api.app, '/orders?atomic=false', { method: 'PATCH', body: { order: [missing] } });
    expect(none.status).toBe(404);
    expect(none.body.type).toBe(problemType('bulk-partially-failed'));
    expect(none.body.processed._embedded.orders).toEqual([]);
    expect(none.body.detail).toBe('1 element(s) failed; none was processed.');
    const some = await call(api.app, '/orders?atomic=false', {
      method: 'PATCH',
      body: { order: [missing, { _links: a._links, status: 'packed' }] },
    });
    expect(some.status).toBe(404);
    expect(some.body.detail).toBe('1 element(s) failed; the others were processed (see processed).');
  });

  test('an element without _links.self.href fails: the body must carry the URLs', async () => {
    const res = await call(api.app, '/orders', { method: 'PATCH', body: { order: [{ status: 'shipped' }, 'text'] } });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/orders/0', '/orders/1']);
  });

  test('every element refused as invalid names its offending field, as validation-failed promises', async () => {
    const [a] = await created(80);
    const self = a._links.self.href;
    const elements: [unknown, string][] = [
      [{ status: 'x' }, '/_links'],
      [{ _links: 'x', status: 'x' }, '/_links'],
      [{ _links: {}, status: 'x' }, '/_links/self/href'],
      [{ _links: { self: { href: 7 } }, status: 'x' }, '/_links/self/href'],
      [{ _links: { self: { href: `${self}/` } }, status: 'x' }, '/_links/self/href'],
      [{ _links: { self: { href: `${self}?x=1` } }, status: 'x' }, '/_links/self/href'],
      [{ _links: { self: { href: '/users/u-ada' } }, status: 'x' }, '/_links/self/href'],
      ['text', '/'],
      [{ _links: { self: { href: self } }, status: 'x' }, '/'],
      [{ _links: { self: { href: self } }, status: 'y' }, '/_links/self/href'],
    ];
    const res = await call(api.app, '/orders', { method: 'PATCH', body: { order: elements.map(([e]) => e) } });
    expect(res.status).toBe(400);
    const failures = res.body.errors.map(
      (e: { instance: string; type: string; errors?: { type: string; instance: string; detail: string }[] }) => {
        expect(e.type).toBe(problemType('validation-failed'));
        const fields = (e.errors ?? []).map((f) => [f.type === problemType('invalid-field'), f.instance]);
        for (const f of e.errors ?? []) expect(f.detail.startsWith(`${f.instance} `)).toBe(true);
        return [e.instance, fields];
      },
    );
    // The element before the last is valid; the last names the same order again.
    expect(failures).toEqual(
      elements.map(([, pointer], i) => [`/orders/${i}`, [[true, pointer]]]).filter((_, i) => i !== elements.length - 2),
    );
    expect((await call(api.app, self)).body.status).toBe('open');
  });
});
