import { randomUUID } from 'node:crypto';
import type { RunningService } from '../../src/service';
import { http, type HttpResult } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

/** Idempotency-Key on POST /orders (one and bulk) and POST /subscriptions: a repeat creates nothing. */
let service: RunningService;
let base: string;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('idem-resources'), { role: 'api' });
  base = service.url;
});
afterAll(() => service.stop());

const keyed = (path: string, key: string, body: unknown, query = ''): Promise<HttpResult> =>
  http(base, `${path}${query}`, { body, headers: { 'idempotency-key': key } });

async function total(path: string): Promise<number> {
  return (await http(base, `${path}?limit=1`)).body.total as number;
}

test('POST /orders: the repeat answers 201 with the same order and Location; one order exists', async () => {
  const key = randomUUID();
  const order = { orderNumber: 7001, itemCount: 3, status: 'open' };
  const before = await total('/orders');
  const first = await keyed('/orders', key, order);
  expect(first.status).toBe(201);
  const again = await keyed('/orders', key, order);
  expect(again.status).toBe(201);
  expect(again.headers.get('location')).toBe(first.headers.get('location'));
  expect(again.body).toEqual(first.body);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await total('/orders')).toBe(before + 1);
  const changed = await keyed('/orders', key, { ...order, itemCount: 4 });
  expect(changed.status).toBe(422);
  expect(changed.body.type).toBe('https://hookstream.dev/problems/idempotency-key-reused');
});

test('a bulk POST /orders repeats as one: the same orders, created once', async () => {
  const key = randomUUID();
  const bulk = {
    order: [
      { orderNumber: 7101, itemCount: 1, status: 'open' },
      { orderNumber: 7102, itemCount: 2, status: 'paid' },
    ],
  };
  const before = await total('/orders');
  const first = await keyed('/orders', key, bulk);
  expect(first.status).toBe(201);
  const again = await keyed('/orders', key, bulk);
  expect(again.status).toBe(201);
  expect(again.body).toEqual(first.body);
  expect(await total('/orders')).toBe(before + 2);
});

test('a non-atomic bulk that partly failed repeats its 400 with the same processed orders; an atomic failure keeps nothing', async () => {
  const key = randomUUID();
  const bulk = {
    order: [
      { orderNumber: 7201, itemCount: 1, status: 'open' },
      { orderNumber: 7202, itemCount: -1, status: 'open' },
    ],
  };
  const before = await total('/orders');
  const first = await keyed('/orders', key, bulk, '?atomic=false');
  expect(first.status).toBe(400);
  expect(first.body.type).toBe('https://hookstream.dev/problems/bulk-partially-failed');
  const again = await keyed('/orders', key, bulk, '?atomic=false');
  expect(again.status).toBe(400);
  expect(again.body.processed).toEqual(first.body.processed);
  expect(again.body.errors).toEqual(first.body.errors);
  expect(await total('/orders')).toBe(before + 1);

  // Nothing was created, so nothing is remembered: the same key then works for the corrected request.
  const atomicKey = randomUUID();
  expect((await keyed('/orders', atomicKey, bulk)).status).toBe(400);
  const fixed = await keyed('/orders', atomicKey, { order: [bulk.order[0]] });
  expect(fixed.status).toBe(201);
});

test('POST /subscriptions: the repeat answers 201 with the same subscription, secret included; one exists', async () => {
  const key = randomUUID();
  const body = { callbackUrl: 'http://127.0.0.1:9/hooks', mode: 'continuous', events: ['order.created'] };
  const before = await total('/subscriptions');
  const first = await keyed('/subscriptions', key, body);
  expect(first.status).toBe(201);
  const again = await keyed('/subscriptions', key, body);
  expect(again.status).toBe(201);
  expect(again.headers.get('location')).toBe(first.headers.get('location'));
  expect(again.body.UUID).toBe(first.body.UUID);
  expect(again.body.secret).toBe(first.body.secret);
  expect(await total('/subscriptions')).toBe(before + 1);
  expect((await keyed('/subscriptions', key, { ...body, mode: 'once' })).status).toBe(422);
});
