import { Kafka, logLevel } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, TENANT_B_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { untilGroupCommitted } from '../support/consumer-group';
import { until } from '../support/until';

/** Subscriptions over HTTP and the callback bridge, on the real broker with real receivers on loopback. */
let service: RunningService;
const prefix = uniquePrefix('callbacks');
let base: string;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(prefix, {
    role: 'all',
    env: {
      CALLBACK_BACKOFF_BASE_MS: '200',
      CALLBACK_BACKOFF_MAX_MS: '4000',
      CALLBACK_MAX_ATTEMPTS: '4',
      CALLBACK_TIMEOUT_MS: '2000',
    },
  });
  base = service.url;
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await service.stop();
});

async function receiver(respond?: ConstructorParameters<typeof Receiver>[0]): Promise<Receiver> {
  const r = await new Receiver(respond).start();
  receivers.push(r);
  return r;
}

async function subscribe(body: Record<string, unknown>, key?: string) {
  const res = await http(base, '/subscriptions', { body, key });
  expect(res.status).toBe(201);
  return res;
}

const subscriptionState = (id: string) => http(base, `/subscriptions/${id}`).then((r) => r.body);
const order = (n: number) => ({ orderNumber: n, itemCount: 1, status: 'open' });
/*
 * Only for "nothing more arrived": after the callbacks a test expects have come, a straggler (a second once
 * callback, one after a refusal or after the cancel's 202) could only show up later, and the bridge gives the test
 * no event for "I will send nothing more". So these checks are "no further request in N ms", and say so.
 */
/**
 * Every event written so far, and every once callback handed on, has been handled by the bridge (its group committed
 * past them): a callback that none of them has made by now never comes.
 */
async function allHandled(): Promise<void> {
  const group = `${prefix}callback-bridge`;
  const { taskEvents, domainEvents, onceCallbacks } = service.kafka.topics;
  // The events first: each is committed only once the callbacks it handed on are written.
  for (const topic of [taskEvents, domainEvents, onceCallbacks]) await untilGroupCommitted(group, topic);
}

describe('the subscriptions API', () => {
  test('POST /subscriptions answers 201 with Location, _links.self, UUID, message and secret', async () => {
    const r = await receiver();
    const res = await subscribe({ callbackUrl: `${r.url}/hook`, mode: 'continuous', events: ['order.created'] });
    expect(res.headers.get('location')).toBe(`/subscriptions/${res.body.UUID}`);
    expect(res.body).toMatchObject({
      _links: { self: { href: `/subscriptions/${res.body.UUID}` } },
      status: 'active',
      mode: 'continuous',
    });
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(typeof res.body.message).toBe('string');
    const got = await http(base, `/subscriptions/${res.body.UUID}`);
    expect(got.body).toMatchObject({ UUID: res.body.UUID, status: 'active', counts: { attempts: 0 } });
    expect(got.body.secret).toBeUndefined();
    expect(
      (await http(base, '/subscriptions')).body._embedded.subscriptions.map((s: { UUID: string }) => s.UUID),
    ).toContain(res.body.UUID);
    expect((await http(base, `/subscriptions/${res.body.UUID}`, { key: TENANT_B_KEY })).status).toBe(404);
  });

  test('an invalid subscription body is 400 with pointers; an unknown task is 400 /taskId', async () => {
    const bad = await http(base, '/subscriptions', {
      body: { callbackUrl: 'http://127.0.0.1:1/x', mode: 'sometimes', events: ['nope'] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { instance: string }) => e.instance)).toEqual(
      expect.arrayContaining(['/mode', '/events/0']),
    );
    const noTask = await http(base, '/subscriptions', {
      body: { callbackUrl: 'http://127.0.0.1:1/x', mode: 'once', taskId: 'missing' },
    });
    expect(noTask.status).toBe(400);
    expect(noTask.body.errors[0].instance).toBe('/taskId');
  });

  test('a callbackUrl that is not absolute http(s) or carries credentials is 403 with an errors[] entry for /callbackUrl; nothing is created', async () => {
    const before = (await http(base, '/subscriptions')).body.total;
    for (const callbackUrl of ['ftp://example.com/x', '/relative', 'http://user:pw@127.0.0.1:1/x']) {
      const res = await http(base, '/subscriptions', {
        body: { callbackUrl, mode: 'once', events: ['order.created'] },
      });
      expect(res.status).toBe(403);
      expect(res.body.type).toBe('https://hookstream.dev/problems/subscription-rejected');
      expect(res.body.errors).toEqual([expect.objectContaining({ instance: '/callbackUrl' })]);
    }
    const task = await http(base, '/tasks', {
      body: { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: 'gopher://x' },
    });
    expect(task.status).toBe(403);
    expect((await http(base, '/subscriptions')).body.total).toBe(before);
  });

  test('cancel: PUT answers 202 with _links.self, UUID, message and its cancelled status, is repeatable; a different body UUID is 403; unknown is 404', async () => {
    const r = await receiver();
    const { body } = await subscribe({ callbackUrl: `${r.url}/x`, mode: 'continuous', events: ['order.deleted'] });
    expect(
      (await http(base, `/subscriptions/${body.UUID}`, { method: 'PUT', body: { UUID: 'someone-else' } })).status,
    ).toBe(403);
    for (let i = 0; i < 2; i++) {
      const res = await http(base, `/subscriptions/${body.UUID}`, { method: 'PUT' });
      expect(res.status).toBe(202);
      // Spec: a body with _links.self and message; it is the subscription as it now is.
      expect(res.body).toMatchObject({
        _links: { self: { href: `/subscriptions/${body.UUID}` } },
        UUID: body.UUID,
        message: expect.any(String),
        status: 'cancelled',
        cancelReason: 'requested',
      });
    }
    expect((await http(base, `/subscriptions/${body.UUID}`, { method: 'PUT', body: { UUID: body.UUID } })).status).toBe(
      202,
    );
    expect((await subscriptionState(body.UUID)).status).toBe('cancelled');
    expect((await http(base, '/subscriptions/unknown', { method: 'PUT' })).status).toBe(404);
  });
});

describe('callbacks', () => {
  test('a callbackUrl in POST /tasks subscribes once: exactly one callback, the final outcome, signed per Standard Webhooks; then cancelled', async () => {
    const r = await receiver();
    const task = await http(base, '/tasks', {
      body: { type: 'countdown', input: { steps: 3, stepMs: 20 }, callbackUrl: `${r.url}/done?x=1` },
    });
    expect(task.status).toBe(202);
    const subHref = task.body._links.subscription.href as string;
    const [cb] = await r.waitFor(1);
    await allHandled();
    expect(r.received).toHaveLength(1);
    expect(cb.path).toBe('/done?x=1');
    expect(cb.headers['content-type']).toBe('application/json');
    // Callback links are relative to the API root, as the api's own are (absolute only on a PUBLIC_URL).
    expect(cb.json).toMatchObject({
      _links: { self: { href: subHref }, task: { href: `/tasks/${task.body.taskId}` } },
      UUID: subHref.split('/').pop(),
      event: 'task.succeeded',
      taskId: task.body.taskId,
      data: { result: { steps: 3 } },
    });
    await until(async () => ((await http(base, subHref)).body.status === 'cancelled' ? true : undefined));
    expect((await http(base, subHref)).body).toMatchObject({
      status: 'cancelled',
      cancelReason: 'delivered-once',
      counts: { delivered: 1 },
    });
    expect(cb.headers['webhook-id']).toMatch(/^msg_/);
    const embedded = await http(base, `/tasks/${task.body.taskId}?embedded=subscription&fields=_embedded`);
    expect(embedded.body._embedded.subscription).toMatchObject({
      UUID: subHref.split('/').pop(),
      status: 'cancelled',
      _links: { self: { href: subHref } },
    });
    expect(embedded.body._embedded.subscription.secret).toBeUndefined();
  });

  test('a test verifies the signature with the standardwebhooks library', async () => {
    const r = await receiver();
    const sub = await subscribe({ callbackUrl: `${r.url}/signed`, mode: 'once', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const [cb] = await r.waitFor(1);
    const verified = new Webhook(sub.body.secret).verify(cb.body, {
      'webhook-id': String(cb.headers['webhook-id']),
      'webhook-timestamp': String(cb.headers['webhook-timestamp']),
      'webhook-signature': String(cb.headers['webhook-signature']),
    });
    expect(verified).toMatchObject({ event: 'order.created', UUID: sub.body.UUID });
    expect(() =>
      new Webhook(sub.body.secret).verify(cb.body.replace('order', 'odder'), {
        'webhook-id': String(cb.headers['webhook-id']),
        'webhook-timestamp': String(cb.headers['webhook-timestamp']),
        'webhook-signature': String(cb.headers['webhook-signature']),
      }),
    ).toThrow();
  });

  test('once with event kinds: concurrent events never produce a second accepted callback', async () => {
    const r = await receiver();
    await subscribe({ callbackUrl: `${r.url}/once`, mode: 'once', events: ['order.created'] });
    await http(base, '/orders', { body: { order: Array.from({ length: 10 }, (_, i) => order(i)) } });
    await r.waitFor(1);
    await allHandled();
    expect(r.received).toHaveLength(1);
  });

  test("continuous gets every matching event in order, then none after the cancel's 202", async () => {
    const r = await receiver();
    const task = await http(base, '/tasks', {
      body: { type: 'countdown', input: { steps: 3, stepMs: 10 }, callbackUrl: `${r.url}/all`, mode: 'continuous' },
    });
    const events = await r.waitFor(6);
    expect(events.map((e) => e.json.event)).toEqual([
      'task.accepted',
      'task.started',
      'task.progress',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
    const sub = await subscribe({
      callbackUrl: `${r.url}/orders`,
      mode: 'continuous',
      events: ['order.created', 'order.updated'],
    });
    const created = await http(base, '/orders', { body: { order: [order(1), order(2)] } });
    await r.waitFor(8);
    expect(r.received.slice(6).map((e) => e.json.event)).toEqual(['order.created', 'order.created']);
    expect(r.received[6].json._links.resource.href.startsWith(`/orders/`)).toBe(true);
    expect((await http(base, `/subscriptions/${sub.body.UUID}`, { method: 'PUT' })).status).toBe(202);
    await http(base, created.body._embedded.orders[0]._links.self.href, { method: 'PATCH', body: { status: 'paid' } });
    await http(base, '/orders', { body: order(3) });
    await allHandled();
    expect(r.received).toHaveLength(8);
    expect(task.status).toBe(202);
  });

  test('403 refuses: the subscription is cancelled and never retried; 410 likewise', async () => {
    for (const status of [403, 410]) {
      const r = await receiver(() => ({ status }));
      const sub = await subscribe({ callbackUrl: `${r.url}/no`, mode: 'continuous', events: ['order.created'] });
      await http(base, '/orders', { body: { order: [order(1), order(2)] } });
      await r.waitFor(1);
      await allHandled();
      expect(r.received).toHaveLength(1);
      const state = await until(async () => {
        const s = await subscriptionState(sub.body.UUID);
        return s.status === 'cancelled' ? s : undefined;
      });
      expect(state.cancelReason).toBe(status === 403 ? 'refused' : 'gone');
    }
  });

  test('a receiver that fails three times then accepts gets the event, with backoff visible in the attempt history', async () => {
    const r = await receiver((_req, i) => ({ status: i < 3 ? 503 : 200 }));
    const sub = await subscribe({ callbackUrl: `${r.url}/flaky`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const got = await r.waitFor(4);
    expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
    const history = await until(async () => {
      const h = (await http(base, `/subscriptions/${sub.body.UUID}/deliveries`)).body;
      return h.total >= 4 ? h : undefined;
    });
    expect(history.attempts.map((a: { outcome: string; statusCode: number }) => [a.outcome, a.statusCode])).toEqual([
      ['failed', 503],
      ['failed', 503],
      ['failed', 503],
      ['delivered', 200],
    ]);
    const gaps = got.slice(1).map((g, i) => g.at - got[i].at);
    // Exponential with jitter in [d/2, d], base 200 ms: at least 100, 200, 400 ms, and growing overall.
    expect(gaps[0]).toBeGreaterThanOrEqual(100);
    expect(gaps[2]).toBeGreaterThanOrEqual(400);
  });

  test('Retry-After is honoured', async () => {
    const r = await receiver((_req, i) =>
      i === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    await subscribe({ callbackUrl: `${r.url}/later`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const [first, second] = await r.waitFor(2);
    expect(second.at - first.at).toBeGreaterThanOrEqual(1900);
  });

  test('after the last attempt the callback is parked in the dead-letter topic and shown in the history', async () => {
    const r = await receiver(() => ({ status: 500 }));
    const sub = await subscribe({ callbackUrl: `${r.url}/dead`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const history = await until(async () => {
      const h = (await http(base, `/subscriptions/${sub.body.UUID}/deliveries`)).body;
      return h.attempts?.some((a: { outcome: string }) => a.outcome === 'dead-lettered') ? h : undefined;
    }, 30000);
    expect(history.attempts.filter((a: { outcome: string }) => a.outcome === 'failed')).toHaveLength(4);
    expect(r.received).toHaveLength(4);
    // The dead letter follows the fourth attempt and is not a fifth: the counts say what the receiver saw.
    expect(history.attempts.at(-1)).toMatchObject({ outcome: 'dead-lettered', attempt: 4 });
    const { counts } = (await http(base, `/subscriptions/${sub.body.UUID}`)).body;
    expect(counts).toMatchObject({ attempts: 4, failed: 4, deadLettered: 1 });
    const consumer = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).consumer({
      groupId: `dlq-reader-${Date.now()}`,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: service.kafka.topics.callbackDeadLetters, fromBeginning: true });
    const parked = await new Promise<Record<string, unknown>>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.key?.toString() === sub.body.UUID) resolve(JSON.parse(message.value?.toString() ?? '{}'));
        },
      });
    });
    await consumer.disconnect();
    expect(parked).toMatchObject({
      subscriptionId: sub.body.UUID,
      event: 'order.created',
      attempts: 4,
      lastError: 'answered 500',
    });
  });

  test('a receiver that does not answer in time is a failed attempt, retried', async () => {
    const r = await receiver((_req, i) => (i === 0 ? { status: 200, delayMs: 3000 } : { status: 200 }));
    const sub = await subscribe({ callbackUrl: `${r.url}/sleepy`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const history = await until(async () => {
      const h = (await http(base, `/subscriptions/${sub.body.UUID}/deliveries`)).body;
      return h.total >= 2 ? h : undefined;
    });
    expect(history.attempts[0]).toMatchObject({ outcome: 'failed' });
    expect(history.attempts[0].statusCode).toBeUndefined();
    expect(history.attempts[0].latencyMs).toBeGreaterThanOrEqual(1900);
    expect(history.attempts[1]).toMatchObject({ outcome: 'delivered', statusCode: 200 });
  });

  test('a connection error is a failed attempt with the error in the history, retried', async () => {
    const r = await receiver();
    const url = r.url;
    await r.stop();
    const sub = await subscribe({ callbackUrl: `${url}/closed`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    const history = await until(async () => {
      const h = (await http(base, `/subscriptions/${sub.body.UUID}/deliveries`)).body;
      return h.total >= 2 ? h : undefined;
    });
    expect(history.attempts[0]).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/ECONNREFUSED/) });
    expect(history.attempts[1].attempt).toBe(2);
    await http(base, `/subscriptions/${sub.body.UUID}`, { method: 'PUT' });
  });

  test('redirects are not followed: a 3xx is a failed attempt', async () => {
    const target = await receiver();
    const r = await receiver((_req, i) =>
      i === 0 ? { status: 302, headers: { location: `${target.url}/elsewhere` } } : { status: 200 },
    );
    const sub = await subscribe({ callbackUrl: `${r.url}/moved`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    await r.waitFor(2);
    expect(target.received).toHaveLength(0);
    const history = await until(async () => {
      const h = (await http(base, `/subscriptions/${sub.body.UUID}/deliveries`)).body;
      return h.total >= 2 ? h : undefined;
    });
    expect(history.attempts[0]).toMatchObject({ outcome: 'failed', statusCode: 302 });
  });

  test('a slow endpoint does not hold up another subscription', async () => {
    const slow = await receiver(() => ({ status: 200, delayMs: 5000 }));
    const fast = await receiver();
    await subscribe({ callbackUrl: `${slow.url}/slow`, mode: 'continuous', events: ['order.created'] });
    await subscribe({ callbackUrl: `${fast.url}/fast`, mode: 'continuous', events: ['order.created'] });
    await http(base, '/orders', { body: order(1) });
    await http(base, '/orders', { body: order(2) });
    // The slow lane is busy with order 1 (its answer held 5 s) before the fast lane is asked for both orders.
    await slow.waitFor(1);
    await fast.waitFor(2);
    expect(fast.received).toHaveLength(2);
    // Still on its first event: the held answer outlasts CALLBACK_TIMEOUT_MS (2 s), so order 1 may have been sent
    // again (a retry), but order 2 only goes out once order 1 is settled, seconds after the fast lane had both.
    expect(new Set(slow.received.map((r) => r.json.data.orderNumber))).toEqual(new Set([1]));
  });
});

describe('rejected targets', () => {
  test('with the default policy a loopback callbackUrl is 403 and nothing is created', async () => {
    const strict = await startTestService(uniquePrefix('strict'), {
      role: 'api',
      env: { CALLBACK_ALLOW_PRIVATE: 'false' },
    });
    try {
      for (const callbackUrl of [
        'http://127.0.0.1:8080/x',
        'http://localhost/x',
        'http://[::1]/x',
        'http://169.254.169.254/x',
      ]) {
        const res = await http(strict.url, '/subscriptions', {
          body: { callbackUrl, mode: 'once', events: ['order.created'] },
        });
        expect(res.status).toBe(403);
        expect(res.body.errors[0].instance).toBe('/callbackUrl');
      }
      expect((await http(strict.url, '/subscriptions')).body.total).toBe(0);
    } finally {
      await strict.stop();
    }
  });
});
