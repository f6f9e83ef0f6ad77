import { randomUUID } from 'node:crypto';
import type { IdempotencyRecord } from '../../src/idempotency/idempotency-records';
import { problemType } from '../../src/problems/problem-types';
import { TENANT_B_KEY } from '../support/api-keys';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/* Idempotency-Key on the creating POSTs, over in-memory Kafka (the keys' topic is a FakeKafka view too). */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi({ allowPrivate: true });
});
afterAll(() => api.app.close());

let n = 0;
const freshKey = () => `"key-${Date.now()}-${(n += 1)}"`;
const countdown = { type: 'countdown', input: { steps: 2, stepMs: 0 } };
const keyed = (key: string, extra: Record<string, string> = {}) => ({ headers: { 'idempotency-key': key, ...extra } });

describe('Idempotency-Key', () => {
  test('a repeat of POST /tasks answers the same task with Idempotent-Replayed, and submits nothing', async () => {
    const key = freshKey();
    const first = await call(api.app, '/tasks', { body: countdown, ...keyed(key) });
    expect(first.status).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const requests = () => api.kafka.publisher.on(api.kafka.topics.taskRequests).length;
    const before = requests();
    // Key order in the body does not make another request.
    const again = await call(api.app, '/tasks', { body: { input: countdown.input, type: 'countdown' }, ...keyed(key) });
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.taskId).toBe(first.body.taskId);
    expect(again.headers.location).toBe(first.headers.location);
    expect(requests()).toBe(before);
  });

  test('a repeat while the first is held by Prefer: wait gets its answer at once: the write has landed', async () => {
    const key = freshKey();
    let firstAnswered = false;
    const first = call(api.app, '/tasks', { body: countdown, ...keyed(key, { prefer: 'wait=3' }) }).then((res) => {
      firstAnswered = true;
      return res;
    });
    // The first's task is written while its answer still waits for the task to end (no runner here: 3 s).
    const requests = () => api.kafka.publisher.on(api.kafka.topics.taskRequests).length;
    const before = requests();
    for (let i = 0; i < 200 && requests() === before; i += 1) await new Promise((r) => setTimeout(r, 10));
    expect(requests()).toBe(before + 1);
    const again = await call(api.app, '/tasks', { body: countdown, ...keyed(key) });
    expect([again.status, again.headers['idempotent-replayed'], firstAnswered]).toEqual([202, 'true', false]);
    const answered = await first;
    expect([answered.status, answered.body.taskId]).toEqual([202, again.body.taskId]);
    expect(requests()).toBe(before + 1);
  });

  test('the same key with another body is 422; the key is per tenant', async () => {
    const key = freshKey();
    expect((await call(api.app, '/tasks', { body: countdown, ...keyed(key) })).status).toBe(202);
    const other = await call(api.app, '/tasks', {
      body: { ...countdown, input: { steps: 3, stepMs: 0 } },
      ...keyed(key),
    });
    expect(other.status).toBe(422);
    expect(other.body.type).toBe(problemType('idempotency-key-reused'));
    const tenantB = await call(api.app, '/tasks', { body: countdown, key: TENANT_B_KEY, ...keyed(key) });
    expect(tenantB.status).toBe(202);
    expect(tenantB.headers['idempotent-replayed']).toBeUndefined();
  });

  test('a 400 leaves no trace: the key can be used again for a valid request', async () => {
    const key = freshKey();
    const invalid = await call(api.app, '/orders', {
      body: { orderNumber: 1, itemCount: 0, status: 'open' },
      ...keyed(key),
    });
    expect(invalid.status).toBe(400);
    const valid = await call(api.app, '/orders', {
      body: { orderNumber: 1, itemCount: 1, status: 'open' },
      ...keyed(key),
    });
    expect(valid.status).toBe(201);
    const repeat = await call(api.app, '/orders', {
      body: { orderNumber: 1, itemCount: 1, status: 'open' },
      ...keyed(key),
    });
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(repeat.body.id).toBe(valid.body.id);
  });

  test("a bulk create's repeat lists the orders it made that are left; 404 once none is", async () => {
    const key = freshKey();
    const orders = [1, 2, 3].map((i) => ({ orderNumber: 9100 + i, itemCount: i, status: 'open' }));
    const first = await call(api.app, '/orders', { body: { order: orders }, ...keyed(key) });
    expect(first.status).toBe(201);
    const ids: string[] = first.body._embedded.orders.map((o: { id: string }) => o.id);
    expect((await call(api.app, `/orders/${ids[1]}`, { method: 'DELETE' })).status).toBe(204);
    const again = await call(api.app, '/orders', { body: { order: orders }, ...keyed(key) });
    expect([again.status, again.headers['idempotent-replayed']]).toEqual([201, 'true']);
    expect(again.body.count).toBe(2);
    expect(again.body._embedded.orders.map((o: { id: string }) => o.id)).toEqual([ids[0], ids[2]]);
    expect(again.body._links.item).toEqual([{ href: `/orders/${ids[0]}` }, { href: `/orders/${ids[2]}` }]);
    for (const id of [ids[0], ids[2]]) await call(api.app, `/orders/${id}`, { method: 'DELETE' });
    const gone = await call(api.app, '/orders', { body: { order: orders }, ...keyed(key) });
    expect([gone.status, gone.body.type, gone.headers['idempotent-replayed']]).toEqual([
      404,
      problemType('not-found'),
      'true',
    ]);
  });

  test('a repeated POST /subscriptions shows the same subscription and its secret again', async () => {
    const key = freshKey();
    const body = { callbackUrl: 'http://127.0.0.1:9/hook', mode: 'continuous', events: ['order.created'] };
    const first = await call(api.app, '/subscriptions', { body, ...keyed(key) });
    const again = await call(api.app, '/subscriptions', { body, ...keyed(key) });
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ UUID: first.body.UUID, secret: first.body.secret });
    expect(api.subscriptions.list('tenant-a').filter((s) => s.id === first.body.UUID)).toHaveLength(1);
    // Cancelled since, the repeat shows it as it is, and does not say "created" alone.
    const cancel = await call(api.app, `/subscriptions/${first.body.UUID}`, { method: 'PUT', body: {} });
    expect(cancel.status).toBe(202);
    const late = await call(api.app, '/subscriptions', { body, ...keyed(key) });
    expect(late.body).toMatchObject({
      status: 'cancelled',
      message: expect.stringMatching(/ended since \(requested\)/),
    });
  });

  test('a key another instance has claimed and not answered yet is 409 with Retry-After', async () => {
    const key = 'claimed-elsewhere';
    const request = await call(api.app, '/tasks', { body: countdown, ...keyed(`"${key}-probe"`) });
    expect(request.status).toBe(202);
    // The claim another api instance wrote, for the same request: this instance sees it in the keys' view.
    const scope = `tenant-a/${key}`;
    const probe = api.kafka.publisher.published.find((r) => r.key === `tenant-a/${key}-probe`);
    const fingerprint = JSON.parse(String(probe?.value)).fingerprint as string;
    const claim: IdempotencyRecord = { kind: 'claim', scope, claimId: 'elsewhere', fingerprint, at: Date.now() };
    await api.kafka.publisher.publish([
      { topic: api.kafka.topics.idempotencyKeys, key: `!claim/${scope}`, value: JSON.stringify(claim) },
    ]);
    const res = await call(api.app, '/tasks', { body: countdown, ...keyed(`"${key}"`) });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe(problemType('idempotency-key-in-flight'));
    expect(res.headers['retry-after']).toBe('1');
  });

  test('a malformed key, or the header twice, is a 400 idempotency-key-invalid', async () => {
    for (const headers of [{ 'idempotency-key': '"unterminated' }, { 'idempotency-key': `"${'k'.repeat(256)}"` }]) {
      const res = await call(api.app, '/tasks', { body: countdown, headers });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('idempotency-key-invalid'));
    }
    const twice = await call(api.app, '/tasks', { body: countdown, headers: { 'idempotency-key': ['"a"', '"b"'] } });
    expect(twice.status).toBe(400);
    expect(twice.body.detail).toMatch(/more than once/);
  });

  test('a bare key with a comma or a semicolon is a 400: a list (as the header twice) or parameters; quoted it is one key', async () => {
    for (const bare of ['a,b', 'a, b', 'a;b']) {
      const res = await call(api.app, '/tasks', { body: countdown, headers: { 'idempotency-key': bare } });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('idempotency-key-invalid'));
    }
    const quoted = await call(api.app, '/tasks', { body: countdown, headers: { 'idempotency-key': '"a,b;c"' } });
    expect(quoted.status).toBe(202);
  });

  test('a path with a trailing slash is the same request as the one without: a repeat replays, not a 422', async () => {
    const headers = { 'idempotency-key': `"${randomUUID()}"` };
    const first = await call(api.app, '/tasks', { body: countdown, headers });
    expect(first.status).toBe(202);
    const again = await call(api.app, '/tasks/', { body: countdown, headers });
    expect(again.status).toBe(202);
    expect(again.body.taskId).toBe(first.body.taskId);
  });
});
