import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http, type HttpResult } from '../support/http';
import { Receiver } from '../support/receiver';
import { committedRecords } from '../support/topic-contents';
import { startTestService, TENANT_B_KEY, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/**
 * Idempotency-Key on POST /tasks (IETF draft): a repeat is answered like the
 * first and creates nothing, across api instances and restarts. `a` runs
 * everything; `b` is a second api on the same topics.
 */
const prefix = uniquePrefix('idem-tasks');
const env = { KAFKA_TIMEOUT_MS: '2000' };
let a: RunningService;
let b: RunningService;
let receiver: Receiver;

beforeAll(async () => {
  a = await startTestService(prefix, { role: 'all', env });
  b = await startTestService(prefix, { role: 'api', env });
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
  await receiver?.stop();
});

const kafka = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING });

/** Task requests ever written (one per task created), counted by reading the topic to its end. */
async function requestsWritten(): Promise<number> {
  return (await committedRecords(testBrokers(), a.kafka.topics.taskRequests)).length;
}

const post = (base: string, key: string | undefined, body: unknown, apiKey?: string): Promise<HttpResult> =>
  http(base, '/tasks', { body, headers: key === undefined ? {} : { 'idempotency-key': key }, key: apiKey });

const countdown = (steps: number) => ({ type: 'countdown', input: { steps, stepMs: 0 } });

test('the same key and body answer like the first: 202, same task, same Location; nothing new is created', async () => {
  const key = `"${randomUUID()}"`;
  const first = await post(a.url, key, countdown(2));
  expect(first.status).toBe(202);
  const written = await requestsWritten();
  const again = await post(a.url, key, countdown(2));
  expect(again.status).toBe(202);
  expect(again.body.taskId).toBe(first.body.taskId);
  expect(again.headers.get('location')).toBe(first.headers.get('location'));
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  // The quoted form of the draft and a bare token name the same key; key order in the body does not matter.
  const bare = await post(a.url, key.slice(1, -1), { input: { stepMs: 0, steps: 2 }, type: 'countdown' });
  expect(bare.body.taskId).toBe(first.body.taskId);
  expect(await requestsWritten()).toBe(written);
});

test('another api instance, and one started later, answer the repeat the same way', async () => {
  const key = randomUUID();
  const first = await post(a.url, key, countdown(1));
  const written = await requestsWritten();
  const onB = await post(b.url, key, countdown(1));
  expect(onB.status).toBe(202);
  expect(onB.body.taskId).toBe(first.body.taskId);
  const later = await startTestService(prefix, { role: 'api', env });
  try {
    const onLater = await post(later.url, key, countdown(1));
    expect(onLater.body.taskId).toBe(first.body.taskId);
  } finally {
    await later.stop();
  }
  expect(await requestsWritten()).toBe(written);
});

test('the same key with another body, or on another path, is a 422 Problem; keys are per tenant', async () => {
  const key = randomUUID();
  const first = await post(a.url, key, countdown(1));
  const other = await post(a.url, key, countdown(2));
  expect(other.status).toBe(422);
  expect(other.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(other.body.type).toBe('https://hookstream.dev/problems/idempotency-key-reused');
  const order = { orderNumber: 1, itemCount: 1, status: 'open' };
  const orders = await http(a.url, '/orders', { body: order, headers: { 'idempotency-key': key } });
  expect(orders.status).toBe(422);
  const tenantB = await post(a.url, key, countdown(1), TENANT_B_KEY);
  expect(tenantB.status).toBe(202);
  expect(tenantB.body.taskId).not.toBe(first.body.taskId);
});

test('concurrent requests with one key create one task; each answer is that task or a 409 in-flight Problem', async () => {
  const key = randomUUID();
  const written = await requestsWritten();
  const answers = await Promise.all([a, a, b, b, a].map((s) => post(s.url, key, countdown(1))));
  const created = new Set(answers.filter((r) => r.status === 202).map((r) => r.body.taskId));
  expect(created.size).toBe(1);
  for (const r of answers.filter((x) => x.status !== 202)) {
    expect(r.status).toBe(409);
    expect(r.body.type).toBe('https://hookstream.dev/problems/idempotency-key-in-flight');
    expect(r.headers.get('retry-after')).toBe('1');
  }
  expect(await requestsWritten()).toBe(written + 1);
});

/** What an api instance writes first for a keyed request: a claim. One that died (or hit a 503) wrote no answer. */
async function claimAsAnotherInstance(key: string, fingerprint: string, at = Date.now()): Promise<void> {
  const scope = `tenant-a/${key}`;
  const topic = a.kafka.topics.idempotencyKeys;
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  await producer.send({
    topic,
    messages: [
      {
        key: `!claim/${scope}`,
        value: JSON.stringify({ kind: 'claim', scope, claimId: randomUUID(), fingerprint, at }),
        partition: a.kafka.partitionFor(topic, scope),
      },
    ],
  });
  await producer.disconnect();
}

test('a key another instance claimed for another request is refused with 422', async () => {
  const key = randomUUID();
  await claimAsAnotherInstance(key, 'the-fingerprint-of-another-request');
  const written = await requestsWritten();
  const res = await post(b.url, key, countdown(1));
  expect(res.status).toBe(422);
  expect(await requestsWritten()).toBe(written);
});

test('a request claimed by an instance that never answered is in flight (409) until its claim expires; then it creates once', async () => {
  // The fingerprint covers method, path and body, not the key: a probe with another key shows this request's.
  const probeKey = randomUUID();
  await post(a.url, probeKey, countdown(1));
  const probeRecords = await readIdempotencyRecords(`tenant-a/${probeKey}`);
  const fingerprint = probeRecords.find((r) => r.kind === 'done')?.fingerprint as string;
  expect(fingerprint).toBeTruthy();
  const key = randomUUID();
  const claimedAt = Date.now();
  await claimAsAnotherInstance(key, fingerprint, claimedAt);
  const before = await requestsWritten();
  const inFlight = await post(a.url, key, countdown(1));
  expect(inFlight.status).toBe(409);
  expect(inFlight.body.type).toBe('https://hookstream.dev/problems/idempotency-key-in-flight');
  // The claim lives 2 × KAFKA_TIMEOUT_MS + 5 s = 9 s; retrying as told, the request then creates its task, once.
  let created = inFlight;
  while (created.status === 409 && Date.now() - claimedAt < 30000) {
    await new Promise((r) => setTimeout(r, Number(created.headers.get('retry-after') ?? 1) * 1000));
    created = await post(b.url, key, countdown(1));
  }
  expect(created.status).toBe(202);
  expect(Date.now() - claimedAt).toBeGreaterThanOrEqual(8000);
  // On the other instance, at once: it catches up with the answer b wrote rather than call the key in flight.
  const repeat = await post(a.url, key, countdown(1));
  expect({ status: repeat.status, taskId: repeat.body.taskId }).toEqual({ status: 202, taskId: created.body.taskId });
  expect(await requestsWritten()).toBe(before + 1);
});

test("a callbackUrl's subscription is created once; the repeat shows it again with its secret", async () => {
  const key = randomUUID();
  const body = { ...countdown(1), callbackUrl: `${receiver.url}/hook` };
  const first = await post(a.url, key, body);
  const again = await post(a.url, key, body);
  expect(again.body._embedded.subscription).toEqual(first.body._embedded.subscription);
  expect(again.body._embedded.subscription.secret).toMatch(/^whsec_/);
  const subs = await http(a.url, '/subscriptions?limit=100');
  const mine = subs.body._embedded.subscriptions.filter((s: { taskId?: string }) => s.taskId === first.body.taskId);
  expect(mine).toHaveLength(1);
});

test('a malformed Idempotency-Key is a 400 Problem and creates nothing', async () => {
  const written = await requestsWritten();
  for (const bad of ['x'.repeat(256), '"unterminated', 'two words']) {
    const res = await post(a.url, bad, countdown(1));
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://hookstream.dev/problems/idempotency-key-invalid');
  }
  expect(await requestsWritten()).toBe(written);
});

/**
 * The idempotency topic's records for one key (answers and claims), in order, once its answer is readable. A commit
 * returns before the broker has written its markers into the partitions, so a read_committed reader may see the
 * answer's transaction (the answer, and the claim's release) a moment after the 202, and one partition of it before the
 * other; it is read again until both show, for at most 10 s.
 */
async function readIdempotencyRecords(scope: string): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 10000;
  for (;;) {
    const records = (await committedRecords(testBrokers(), a.kafka.topics.idempotencyKeys))
      .filter((r) => (r.key === scope || r.key === `!claim/${scope}`) && r.value !== null)
      .map((r) => JSON.parse(r.value as string) as Record<string, unknown>);
    const shown = new Set(records.map((r) => r.kind));
    if ((shown.has('done') && shown.has('release')) || Date.now() > deadline) return records;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('the answer is kept in Kafka, in the idempotency-keys topic, under the tenant and key', async () => {
  const key = randomUUID();
  const first = await post(a.url, key, countdown(1));
  const records = await readIdempotencyRecords(`tenant-a/${key}`);
  // Answer and claim have keys of their own, on partitions of their own: the order that holds is each key's.
  const claims = records.filter((r) => r.kind !== 'done').map((r) => r.kind);
  expect({ claims, answers: records.filter((r) => r.kind === 'done').length }).toEqual({
    claims: ['claim', 'release'],
    answers: 1,
  });
  // The answer names the creation by its time: a repeat answers that task, not one made under its id since.
  const answer = { status: 202, ids: [first.body.taskId], createdAt: first.body.createdAt };
  expect(first.body.createdAt).toEqual(expect.any(String));
  expect(records.find((r) => r.kind === 'done')).toMatchObject({ scope: `tenant-a/${key}`, answer });
});

test.each([
  ['another tenant', 'tenant-b', TENANT_B_KEY],
  ['the same tenant', 'tenant-a', undefined],
])(
  'a repeat after its task was forgotten is 404, also when a Kafka client made a task under that id since (%s)',
  async (_who, tenant, apiKey) => {
    const key = `"${randomUUID()}"`;
    const first = await http(a.url, '/tasks', {
      body: countdown(1),
      headers: { 'idempotency-key': key, prefer: 'wait=10' },
    });
    expect(first.body.status).toBe('succeeded');
    const taskId = first.body.taskId as string;
    expect((await http(a.url, `/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    // A Kafka client may name its task (the record key): here the id of the forgotten one, with another request.
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const value = JSON.stringify({ type: 'countdown', input: { steps: 2, stepMs: 0 }, tenant });
    await producer.send({ topic: a.kafka.topics.taskRequests, messages: [{ key: taskId, value }] });
    await producer.disconnect();
    await until(async () =>
      (await http(a.url, `/tasks/${taskId}`, { key: apiKey })).status === 200 ? true : undefined,
    );
    const again = await post(a.url, key, countdown(1));
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.type).toBe('https://hookstream.dev/problems/not-found');
  },
);
