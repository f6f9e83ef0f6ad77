import { Webhook } from 'standardwebhooks';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver, type Received } from '../support/receiver';
import { startTestService, TENANT_B_KEY, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/** The 202 of POST /tasks with a callbackUrl shows the new subscription's secret, once; it verifies the callbacks. */
let service: RunningService;
let base: string;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(uniquePrefix('task-secret'), {
    role: 'all',
    env: {
      CALLBACK_BACKOFF_BASE_MS: '200',
      CALLBACK_BACKOFF_MAX_MS: '2000',
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

async function receiver(): Promise<Receiver> {
  const r = await new Receiver().start();
  receivers.push(r);
  return r;
}

const signatureHeaders = (cb: Received) => ({
  'webhook-id': String(cb.headers['webhook-id']),
  'webhook-timestamp': String(cb.headers['webhook-timestamp']),
  'webhook-signature': String(cb.headers['webhook-signature']),
});

test('the 202 embeds the subscription with its secret, which verifies the callback signature', async () => {
  const r = await receiver();
  const callbackUrl = `${r.url}/hook`;
  const task = await http(base, '/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 1 }, callbackUrl } });
  expect(task.status).toBe(202);
  const subHref = task.body._links.subscription.href as string;
  const embedded = task.body._embedded.subscription;
  expect(embedded).toMatchObject({
    _links: { self: { href: subHref }, task: { href: `/tasks/${task.body.taskId}` } },
    UUID: subHref.split('/').pop(),
    status: 'active',
    mode: 'once',
    callbackUrl,
    taskId: task.body.taskId,
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
  });
  expect(task.body.message).toMatch(/_embedded\.subscription\.secret/);

  const [cb] = await r.waitFor(1);
  expect(cb).toBeDefined();
  const verified = new Webhook(embedded.secret).verify(cb.body, signatureHeaders(cb));
  expect(verified).toMatchObject({ event: 'task.succeeded', taskId: task.body.taskId, UUID: embedded.UUID });
  const tampered = cb.body.replace('succeeded', 'failed');
  expect(() => new Webhook(embedded.secret).verify(tampered, signatureHeaders(cb))).toThrow();

  // Shown that one time only: never again on the task or the subscription.
  const later = await http(base, `/tasks/${task.body.taskId}?embedded=subscription`);
  expect(later.body._embedded.subscription.UUID).toBe(embedded.UUID);
  expect(later.body._embedded.subscription.secret).toBeUndefined();
  expect(JSON.stringify((await http(base, subHref)).body)).not.toContain(embedded.secret);
  expect((await http(base, subHref, { key: TENANT_B_KEY })).status).toBe(404);
});

test("continuous: every callback verifies with its task's secret from the 202, not another task's", async () => {
  const r = await receiver();
  const body = { type: 'countdown', input: { steps: 3, stepMs: 10 }, callbackUrl: `${r.url}/all`, mode: 'continuous' };
  const submit = () => http(base, '/tasks', { body });
  const [task, other] = [await submit(), await submit()];
  const secret = task.body._embedded.subscription.secret as string;
  const otherSecret = other.body._embedded.subscription.secret as string;
  expect(secret).not.toBe(otherSecret);
  const mine = await until(async () => {
    const got = r.received.filter((cb) => cb.json.taskId === task.body.taskId);
    return got.some((cb) => cb.json.event === 'task.succeeded') ? got : undefined;
  });
  const events = mine.map((cb) => cb.json.event);
  expect(events).toEqual(expect.arrayContaining(['task.started', 'task.progress', 'task.succeeded']));
  for (const cb of mine) {
    expect(new Webhook(secret).verify(cb.body, signatureHeaders(cb))).toMatchObject({ taskId: task.body.taskId });
    expect(() => new Webhook(otherSecret).verify(cb.body, signatureHeaders(cb))).toThrow();
  }
});

test('without a callbackUrl the 202 embeds nothing', async () => {
  const task = await http(base, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
  expect(task.status).toBe(202);
  expect(task.body._embedded).toBeUndefined();
  expect(task.body._links.subscription).toBeUndefined();
  expect(task.body.message).not.toMatch(/_embedded\.subscription/);
});
