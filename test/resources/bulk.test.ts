import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

let service: RunningService;
let base: string;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('bulk'), { role: 'api' });
  base = service.url as string;
});
afterAll(() => service.stop());

const order = (itemCount: unknown, orderNumber = 1) => ({ orderNumber, itemCount, status: 'open' });
const total = async () => (await http(base, '/orders')).body.total as number;

describe('atomic bulk operations', () => {
  test('spec bulk example: itemCount 42 and -100 fails as a whole; nothing is created', async () => {
    const before = await total();
    const res = await http(base, '/orders', { body: { order: [order(42), order(-100)] } });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body.type).toBe('https://hookstream.dev/problems/bulk-failed');
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({
      instance: '/orders/1',
      status: 400,
      type: expect.any(String),
      title: expect.any(String),
      detail: expect.any(String),
    });
    expect(res.body.errors[0].errors[0].instance).toBe('/itemCount');
    expect(await total()).toBe(before);
  });

  test('bulk create of valid elements creates all of them: 201 listing them under _embedded', async () => {
    const before = await total();
    const res = await http(base, '/orders', { body: { order: [order(1, 10), order(2, 11), order(3, 12)] } });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^application\/hal\+json/);
    expect(res.body._embedded.orders.map((o: { orderNumber: number }) => o.orderNumber)).toEqual([10, 11, 12]);
    expect(await total()).toBe(before + 3);
  });

  test('bulk update changes every listed resource, or none when one element fails', async () => {
    const created = (await http(base, '/orders', { body: { order: [order(1, 20), order(1, 21)] } })).body._embedded
      .orders;
    const [a, b] = created.map((o: { _links: { self: { href: string } } }) => o._links.self.href);
    const failing = await http(base, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: { self: { href: a } }, status: 'paid' },
          { _links: { self: { href: '/orders/does-not-exist' } }, status: 'paid' },
          { _links: { self: { href: b } }, itemCount: 0 },
        ],
      },
    });
    expect(failing.status).toBe(400);
    expect(failing.body.errors.map((e: { instance: string; status: number }) => [e.instance, e.status])).toEqual([
      ['/orders/1', 404],
      ['/orders/2', 400],
    ]);
    expect((await http(base, a)).body.status).toBe('open');

    const ok = await http(base, '/orders', {
      method: 'PATCH',
      body: {
        order: [
          { _links: { self: { href: a } }, status: 'paid' },
          { _links: { self: { href: b } }, itemCount: 9 },
        ],
      },
    });
    expect(ok.status).toBe(200);
    expect((await http(base, a)).body.status).toBe('paid');
    expect((await http(base, b)).body.itemCount).toBe(9);
  });

  test('a bulk update element without _links.self.href fails; the body must carry the URLs', async () => {
    const res = await http(base, '/orders', { method: 'PATCH', body: { order: [{ status: 'paid' }] } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0]).toMatchObject({ instance: '/orders/0', status: 400 });
  });

  test('non-atomic only on opt-in: a partial failure is 4xx with errors and processed, and the successes exist', async () => {
    const before = await total();
    const res = await http(base, '/orders?atomic=false', {
      body: { order: [order(5, 30), order('42', 31), order(6, 32)] },
    });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://hookstream.dev/problems/bulk-partially-failed');
    expect(res.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/orders/1']);
    const processed = res.body.processed._embedded.orders;
    expect(processed.map((o: { orderNumber: number }) => o.orderNumber)).toEqual([30, 32]);
    for (const o of processed) expect((await http(base, o._links.self.href)).status).toBe(200);
    expect(await total()).toBe(before + 2);
  });

  test('non-atomic with every element valid succeeds like the atomic one', async () => {
    const res = await http(base, '/orders?atomic=false', { body: { order: [order(1, 40)] } });
    expect(res.status).toBe(201);
  });

  test('a malformed bulk body is a 400 with pointers', async () => {
    for (const body of [{ order: [] }, { order: [order(1)], other: 1 }, { order: 'x' }]) {
      const res = await http(base, '/orders', { body });
      expect(res.status).toBe(400);
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    expect((await http(base, '/orders?atomic=maybe', { body: { order: [order(1)] } })).status).toBe(400);
  });
});
