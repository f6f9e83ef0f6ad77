import { MAX_FIELD_ERRORS } from '../../src/problems/problem-detail';
import { problemType } from '../../src/problems/problem-types';
import { BACKLOG_CURSORS_VIEW } from '../../src/subscriptions/backlog-cursor';
import { attemptKey, DELIVERIES_VIEW, type DeliveryAttempt } from '../../src/subscriptions/delivery-attempt';
import { SUBSCRIPTIONS_VIEW, type Subscription } from '../../src/subscriptions/subscription';
import { TASKS_VIEW, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import { TENANT_B_KEY } from '../support/api-keys';
import { call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * Subscriptions over in-memory Kafka. The callback URL policy is asked with literal addresses only (no DNS); the
 * strict api refuses internal targets as production does, the tolerant one (CALLBACK_ALLOW_PRIVATE) takes them.
 */
let strict: InMemoryApi;
let tolerant: InMemoryApi;
beforeAll(async () => {
  [strict, tolerant] = await Promise.all([inMemoryApi(), inMemoryApi({ allowPrivate: true })]);
});
afterAll(() => Promise.all([strict.app.close(), tolerant.app.close()]));

const subscription = { callbackUrl: 'http://127.0.0.1:9/hook', mode: 'continuous', events: ['task.succeeded'] };

async function subscribe(body: unknown = subscription, key?: string) {
  const res = await call(tolerant.app, '/subscriptions', { body, key });
  expect(res.status).toBe(201);
  return res.body;
}

describe('POST /subscriptions', () => {
  test('201 with Location, the UUID and the secret, which only this answer shows', async () => {
    const res = await call(tolerant.app, '/subscriptions', { body: subscription });
    expect(res.status).toBe(201);
    const { UUID } = res.body;
    expect(res.headers.location).toBe(`/subscriptions/${UUID}`);
    expect(res.body).toMatchObject({
      status: 'active',
      mode: 'continuous',
      events: ['task.succeeded'],
      secret: expect.stringMatching(/^whsec_/),
      message: expect.any(String),
      _links: { self: { href: `/subscriptions/${UUID}` } },
    });
    const later = await call(tolerant.app, `/subscriptions/${UUID}`);
    expect(later.body.UUID).toBe(UUID);
    expect(later.body.secret).toBeUndefined();
  });

  test.each([
    ['not absolute', 'hook'],
    ['not http(s)', 'ftp://93.184.215.14/hook'],
    ['with credentials', 'http://user:pw@93.184.215.14/hook'],
  ])('a callbackUrl %s is 403 even where private targets are allowed, and nothing is written', async (_why, url) => {
    const before = tolerant.kafka.publisher.published.length;
    const res = await call(tolerant.app, '/subscriptions', { body: { ...subscription, callbackUrl: url } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({
      type: problemType('subscription-rejected'),
      status: 403,
      errors: [{ instance: '/callbackUrl', status: 403 }],
    });
    expect(tolerant.kafka.publisher.published.length).toBe(before);
  });

  test.each(['http://127.0.0.1/hook', 'http://10.1.2.3/hook', 'http://169.254.169.254/latest', 'http://[::1]:8080/x'])(
    'an internal target (%s) is 403 unless CALLBACK_ALLOW_PRIVATE',
    async (url) => {
      const res = await call(strict.app, '/subscriptions', { body: { ...subscription, callbackUrl: url } });
      expect(res.status).toBe(403);
      expect(res.body.errors[0].detail).toMatch(/internal address/);
    },
  );

  test('a host the resolver cannot answer for now is 503 with Retry-After (and POST /tasks too); one that does not exist is 403', async () => {
    const resolver = async (host: string) => {
      const code = host.startsWith('flaky.') ? 'EAI_AGAIN' : 'ENOTFOUND';
      throw Object.assign(new Error(code), { code });
    };
    const api = await inMemoryApi({ lookup: resolver });
    try {
      const before = api.kafka.publisher.published.length;
      const flaky = { ...subscription, callbackUrl: 'https://flaky.example.com/hook' };
      const res = await call(api.app, '/subscriptions', { body: flaky });
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ type: problemType('callback-url-unverified'), status: 503 });
      const task = { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: flaky.callbackUrl };
      expect((await call(api.app, '/tasks', { body: task })).status).toBe(503);
      expect(api.kafka.publisher.published.length).toBe(before);
      const missing = { ...subscription, callbackUrl: 'https://missing.example.com/hook' };
      const refused = await call(api.app, '/subscriptions', { body: missing });
      expect(refused.status).toBe(403);
      expect(refused.body.errors[0].detail).toMatch(/does not resolve/);
    } finally {
      await api.app.close();
    }
  });

  test('a public literal address is accepted by the strict policy', async () => {
    const res = await call(strict.app, '/subscriptions', {
      body: { ...subscription, callbackUrl: 'https://93.184.215.14/hook' },
    });
    expect(res.status).toBe(201);
  });

  test('400 with pointers: a mode, an event kind, or taskId and events both or neither', async () => {
    const bad = await call(tolerant.app, '/subscriptions', {
      body: { ...subscription, mode: 'sometimes', events: ['task.exploded'] },
    });
    expect(bad.status).toBe(400);
    const pointers = bad.body.errors.map((e: { instance: string }) => e.instance);
    expect(pointers).toEqual(expect.arrayContaining(['/mode', '/events/0']));
    const neither = await call(tolerant.app, '/subscriptions', {
      body: { callbackUrl: subscription.callbackUrl, mode: 'once' },
    });
    expect(neither.status).toBe(400);
    expect(neither.body.errors.map((e: { instance: string }) => e.instance)).toEqual(['/events']);
  });

  test("a subscription to a task needs the caller's own task", async () => {
    const task = await call(tolerant.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    const { taskId } = task.body;
    const mine = await call(tolerant.app, '/subscriptions', {
      body: { callbackUrl: subscription.callbackUrl, mode: 'once', taskId },
    });
    expect(mine.status).toBe(201);
    expect(mine.body._links.task).toEqual({ href: `/tasks/${taskId}` });
    const theirs = await call(tolerant.app, '/subscriptions', {
      key: TENANT_B_KEY,
      body: { callbackUrl: subscription.callbackUrl, mode: 'once', taskId },
    });
    expect(theirs.status).toBe(400);
    expect(theirs.body.errors[0].instance).toBe('/taskId');
  });

  test("410 for a task whose first events retention deleted; a repeated key keeps the first request's answer", async () => {
    const task = await call(tolerant.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    const { taskId, offset } = task.body;
    const body = { callbackUrl: subscription.callbackUrl, mode: 'once', taskId };
    const keyed = { 'idempotency-key': `deleted-${taskId}` };
    const before = await call(tolerant.app, '/subscriptions', { body, headers: keyed });
    expect(before.status).toBe(201);
    const count = async () => (await call(tolerant.app, '/subscriptions?limit=1')).body.total as number;
    const total = await count();
    try {
      // Its first event (the 202's offset) kept: subscribed as ever.
      tolerant.reader.logStart = BigInt(offset);
      expect((await call(tolerant.app, '/subscriptions', { body })).status).toBe(201);
      tolerant.reader.logStart = BigInt(offset) + 1n;
      const gone = await call(tolerant.app, '/subscriptions', { body });
      expect(gone.status).toBe(410);
      expect(gone.body).toMatchObject({ type: problemType('task-events-deleted'), status: 410 });
      expect(gone.body.detail).toContain(`before offset ${BigInt(offset) + 1n}`);
      expect(await count()).toBe(total + 1);
      const repeated = await call(tolerant.app, '/subscriptions', { body, headers: keyed });
      expect(repeated.status).toBe(201);
      expect(repeated.body.UUID).toBe(before.body.UUID);
    } finally {
      tolerant.reader.logStart = 0n;
    }
  });
});

describe('reading and cancelling', () => {
  /** As a bridge leaves a once subscription it delivered: the attempt committed, then the end, which this api has
   * applied while the attempt is still unread (two topics, read apart). */
  function endedByItsDelivery(UUID: string) {
    const subscriptions = tolerant.kafka.viewOf(SUBSCRIPTIONS_VIEW);
    const ended = { ...(subscriptions.get(UUID) as Subscription), status: 'cancelled' as const };
    subscriptions.set(UUID, { ...ended, cancelReason: 'delivered-once' });
    const deliveries = tolerant.kafka.viewOf(DELIVERIES_VIEW);
    const attempt: DeliveryAttempt = {
      subscriptionId: UUID,
      webhookId: `msg_${UUID}`,
      event: 'task.succeeded',
      attempt: 1,
      at: new Date().toISOString(),
      outcome: 'delivered',
      statusCode: 200,
      latencyMs: 3,
    };
    deliveries.commitElsewhere(() => deliveries.set(attemptKey(attempt, 'r1'), attempt));
    return deliveries;
  }

  test('a once subscription the bridge ended is shown with the delivery that ended it, read from the other topic', async () => {
    const { UUID } = await subscribe({ ...subscription, mode: 'once' });
    const deliveries = endedByItsDelivery(UUID);
    const syncs = deliveries.syncs;
    const res = await call(tolerant.app, `/subscriptions/${UUID}`);
    expect(res.body).toMatchObject({ status: 'cancelled', cancelReason: 'delivered-once', counts: { delivered: 1 } });
    // Once per ended subscription: read again, it costs no sync.
    await call(tolerant.app, `/subscriptions/${UUID}`);
    await call(tolerant.app, `/subscriptions/${UUID}/deliveries`);
    expect(deliveries.syncs).toBe(syncs + 1);
  });

  test("so is a task's subscription embedded in the task", async () => {
    const body = { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: subscription.callbackUrl };
    const task = await call(tolerant.app, '/tasks', { body });
    const UUID = task.body._embedded.subscription.UUID as string;
    endedByItsDelivery(UUID);
    const res = await call(tolerant.app, `/tasks/${task.body.taskId}?embedded=subscription`);
    expect(res.body._embedded.subscription).toMatchObject({ cancelReason: 'delivered-once', counts: { delivered: 1 } });
  });

  test("another tenant's subscription is 404, and absent from its list", async () => {
    const { UUID } = await subscribe();
    expect((await call(tolerant.app, `/subscriptions/${UUID}`, { key: TENANT_B_KEY })).status).toBe(404);
    expect((await call(tolerant.app, `/subscriptions/${UUID}/deliveries`, { key: TENANT_B_KEY })).status).toBe(404);
    const cancel = await call(tolerant.app, `/subscriptions/${UUID}`, { key: TENANT_B_KEY, method: 'PUT' });
    expect(cancel.status).toBe(404);
    const list = await call(tolerant.app, '/subscriptions?limit=100', { key: TENANT_B_KEY });
    expect(list.body._links.item.map((l: { href: string }) => l.href)).not.toContain(`/subscriptions/${UUID}`);
    expect((await call(tolerant.app, `/subscriptions/${UUID}`)).body.status).toBe('active');
  });

  test('a task subscription embeds its task on request; an event-kind one has no task to embed', async () => {
    const task = await call(tolerant.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    const { taskId } = task.body;
    const sub = await subscribe({ callbackUrl: subscription.callbackUrl, mode: 'once', taskId });
    const res = await call(tolerant.app, `/subscriptions/${sub.UUID}?embedded=task&fields=_embedded`);
    expect(res.status).toBe(200);
    expect(res.body._embedded.task).toMatchObject({ taskId, _links: { self: { href: `/tasks/${taskId}` } } });
    expect((await call(tolerant.app, `/subscriptions/${sub.UUID}`)).body._embedded).toBeUndefined();
    // The creating answer is the same representation, so it embeds on request as GET does.
    const created = await call(tolerant.app, '/subscriptions?embedded=task', {
      body: { callbackUrl: subscription.callbackUrl, mode: 'once', taskId },
    });
    expect(created.status).toBe(201);
    expect(created.body._embedded.task).toMatchObject({ taskId, _links: { self: { href: `/tasks/${taskId}` } } });
    expect(created.body.secret).toMatch(/^whsec_/);
    const kinds = await subscribe();
    expect((await call(tolerant.app, `/subscriptions/${kinds.UUID}?embedded=task`)).body._embedded).toBeUndefined();
  });

  test('a task subscription is owed the task events from its first one: a backlog cursor there, with it', async () => {
    const task = await call(tolerant.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    const { taskId, topic, partition, offset } = task.body;
    // The fake view sees what is written once it is open.
    const cursors = tolerant.kafka.viewOf(BACKLOG_CURSORS_VIEW);
    const running = await subscribe({ callbackUrl: subscription.callbackUrl, mode: 'once', taskId });
    expect(running.message).not.toMatch(/already finished/);
    expect(cursors.get(`${running.UUID}/${topic}/${partition}`)).toEqual({
      subscriptionId: running.UUID,
      topic,
      partition,
      from: String(offset),
    });
    const tasks = tolerant.kafka.viewOf(TASKS_VIEW);
    const snapshot = tasks.get(taskId) as TaskSnapshot;
    const at = new Date().toISOString();
    tasks.set(taskId, { ...snapshot, status: 'succeeded', finishedAt: at, updatedAt: at });
    const late = await subscribe({ callbackUrl: subscription.callbackUrl, mode: 'once', taskId });
    expect(late.message).toMatch(/already finished \(succeeded\); its outcome is sent all the same/);
    expect(late.secret).toMatch(/^whsec_/);
    expect(cursors.get(`${late.UUID}/${topic}/${partition}`)).toMatchObject({ from: String(offset) });
    // Event kinds are wanted from the subscription on: nothing is owed.
    const kinds = await subscribe();
    expect([...cursors.values()].filter((c) => c.subscriptionId === kinds.UUID)).toEqual([]);
  });

  test("GET /subscriptions lists the caller's own, oldest first, paged", async () => {
    const first = await subscribe(subscription, TENANT_B_KEY);
    const second = await subscribe(subscription, TENANT_B_KEY);
    const res = await call(tolerant.app, '/subscriptions?limit=1', { key: TENANT_B_KEY });
    expect(res.body).toMatchObject({ count: 1, total: expect.any(Number) });
    const all = await call(tolerant.app, '/subscriptions?limit=100', { key: TENANT_B_KEY });
    const ids = all.body._embedded.subscriptions.map((s: { UUID: string }) => s.UUID);
    expect(ids.indexOf(first.UUID)).toBeLessThan(ids.indexOf(second.UUID));
    expect(res.body._links.next.href).toBe('/subscriptions?offset=1&limit=1');
  });

  test('the counts tell the outcomes apart: a 403 is refused, a 410 gone', async () => {
    const { UUID } = await subscribe();
    const outcomes = [
      ['failed', 500],
      ['delivered', 204],
      ['refused', 403],
      ['gone', 410],
    ] as const;
    const records = outcomes.map(([outcome, statusCode], i) => {
      const a = {
        subscriptionId: UUID,
        webhookId: `msg_${i}`,
        event: 'task.succeeded',
        attempt: 1,
        outcome,
        statusCode,
      };
      const value = JSON.stringify({ ...a, at: new Date(Date.now() + i).toISOString(), latencyMs: 1 });
      return { topic: tolerant.kafka.topics.deliveries, key: `${UUID}/msg_${i}/1`, value };
    });
    await tolerant.kafka.publisher.publish(records);
    const res = await call(tolerant.app, `/subscriptions/${UUID}`);
    expect(res.body.counts).toEqual({ attempts: 4, delivered: 1, failed: 1, deadLettered: 0, refused: 1, gone: 1 });
    expect(res.body.lastDelivery).toMatchObject({ outcome: 'gone', statusCode: 410 });
  });

  test('the delivery history is paged and starts empty', async () => {
    const { UUID } = await subscribe();
    const res = await call(tolerant.app, `/subscriptions/${UUID}/deliveries`);
    expect(res.body).toMatchObject({
      count: 0,
      total: 0,
      attempts: [],
      _links: { subscription: { href: `/subscriptions/${UUID}` } },
    });
  });

  test('PUT cancels: 202 with UUID and message; repeatable; the subscription then reads cancelled', async () => {
    const { UUID } = await subscribe();
    for (let i = 0; i < 2; i += 1) {
      const res = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT' });
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({
        UUID,
        message: expect.any(String),
        _links: { self: { href: `/subscriptions/${UUID}` } },
      });
    }
    expect((await call(tolerant.app, `/subscriptions/${UUID}`)).body).toMatchObject({
      status: 'cancelled',
      cancelReason: 'requested',
    });
  });

  test("the cancel's 202 is the subscription as GET now shows it: fields and embedded select from it", async () => {
    const task = await call(tolerant.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    const { taskId } = task.body;
    const { UUID } = await subscribe({ callbackUrl: subscription.callbackUrl, mode: 'continuous', taskId });
    const url = `/subscriptions/${UUID}?fields=status,cancelReason,_embedded&embedded=task`;
    const res = await call(tolerant.app, url, { method: 'PUT' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      status: 'cancelled',
      cancelReason: 'requested',
      _embedded: { task: expect.objectContaining({ taskId }) },
    });
    const whole = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT' });
    const { message, ...rest } = whole.body;
    const { message: _shown, ...got } = (await call(tolerant.app, `/subscriptions/${UUID}`)).body;
    expect(rest).toEqual(got);
    expect(message).toMatch(/cancelled/);
  });

  test('a PUT whose body names another UUID is 403 and cancels nothing', async () => {
    const { UUID } = await subscribe();
    const res = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', body: { UUID: 'someone-else' } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: problemType('uuid-mismatch'), errors: [{ instance: '/UUID' }] });
    expect((await call(tolerant.app, `/subscriptions/${UUID}`)).body.status).toBe('active');
    const same = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', body: { UUID } });
    expect(same.status).toBe(202);
  });

  test('a cancel whose body holds anything but UUID (and status "cancelled") is 400 and cancels nothing', async () => {
    // A client PUTting back a changed representation to update it must not lose its subscription instead.
    const { UUID } = await subscribe();
    const bodies = [
      { status: 'active', mode: 'once', callbackUrl: 'https://8.8.8.8/new' },
      { foo: 1 },
      { UUID, _links: { self: { href: '/subscriptions/other' } } },
      { status: 'paused' },
      { UUID: 42 },
    ];
    for (const body of bodies) {
      const res = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', body });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('validation-failed'));
      const named = Object.entries(body)
        .filter(([k, v]) => !(k === 'UUID' && typeof v === 'string') && !(k === 'status' && v === 'cancelled'))
        .map(([k]) => k);
      expect(res.body.errors.map((e: { instance: string }) => e.instance).sort()).toEqual(
        named.map((k) => `/${k}`).sort(),
      );
    }
    // JSON that is no object is no "no body" either: null is refused like 0, [] and "".
    const json = { 'content-type': 'application/json' };
    for (const raw of ['null', '0', '[]', '""']) {
      const res = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', raw, headers: json });
      expect([raw, res.status, res.body.type]).toEqual([raw, 400, problemType('validation-failed')]);
    }
    expect((await call(tolerant.app, `/subscriptions/${UUID}`)).body.status).toBe('active');
    for (const body of [{ UUID: UUID.toUpperCase() }, { status: 'cancelled' }, { UUID, status: 'cancelled' }]) {
      expect((await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', body })).status).toBe(202);
    }
  });

  test('a cancel with thousands of unknown members lists a hundred errors, as every answer does, not one per member', async () => {
    // One error per member made a 1 MB body a 22 MB answer: any key could have the server send 24 times its input.
    const { UUID } = await subscribe();
    const body = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`m${i}`, 0]));
    const res = await call(tolerant.app, `/subscriptions/${UUID}`, { method: 'PUT', body });
    expect(res.status).toBe(400);
    expect(res.body.errors).toHaveLength(MAX_FIELD_ERRORS);
    expect(res.body.errors[MAX_FIELD_ERRORS - 1].detail).toBe(
      `and ${5000 - MAX_FIELD_ERRORS + 1} more errors, not listed`,
    );
    expect((await call(tolerant.app, `/subscriptions/${UUID}`)).body.status).toBe('active');
  });
});
