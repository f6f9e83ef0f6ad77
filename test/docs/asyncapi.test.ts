import { Parser } from '@asyncapi/parser';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * GET /asyncapi.json parses with the official AsyncAPI parser, and every record real traffic wrote (tasks that
 * succeed, fail and are cancelled; a resource created, changed and deleted; a callback dead-lettered) matches the
 * message the document declares for it, value and headers.
 */
let service: RunningService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(uniquePrefix('asyncapi'), {
    role: 'all',
    env: { CALLBACK_MAX_ATTEMPTS: '1', CALLBACK_BACKOFF_BASE_MS: '10', CALLBACK_BACKOFF_MAX_MS: '10' },
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await service.stop();
});

interface Message {
  name: string;
  payload: object;
  headers?: { $ref: string };
}
interface Document {
  channels: Record<string, { address: string; messages: Record<string, { $ref: string }> }>;
  components: { messages: Record<string, Message>; schemas: Record<string, object> };
}
interface Read {
  key: string;
  value: string;
  headers: Record<string, string>;
}

/** Every record of `topic` whose key `wanted` accepts, once `count` of them were read. */
async function records(topic: string, wanted: (key: string) => boolean, count: number): Promise<Read[]> {
  const kafka = new Kafka({ clientId: 'asyncapi-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: uniquePrefix('asyncapi-reader') });
  const found: Read[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString() ?? '';
        if (!wanted(key)) return;
        const headers = Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)]));
        found.push({ key, value: message.value?.toString() ?? '', headers });
      },
    });
    await until(async () => (found.length >= count ? true : undefined), 30000);
  } finally {
    await consumer.disconnect();
  }
  return found;
}

test('the document parses, and real records of every user-facing topic match their declared messages', async () => {
  const res = await http(service.url, '/asyncapi.json', { key: null });
  expect(res.status).toBe(200);
  const doc = res.body as Document;
  const { diagnostics } = await new Parser().parse(res.text);
  expect(diagnostics.filter((d) => d.severity === 0)).toEqual([]);

  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const { schemas } = doc.components;
  /** the message the channel declares under this name (a ce_type, or task.request) */
  const messageOf = (channel: string, name: string): Message => {
    const refs = Object.values(doc.channels[channel].messages).map((r) => r.$ref.split('/').pop() as string);
    const found = refs.map((id) => doc.components.messages[id]).find((m) => m.name === name);
    if (!found) throw new Error(`${channel} declares no message ${name}`);
    return found;
  };
  const check = (channel: string, name: string, r: Read) => {
    const m = messageOf(channel, name);
    const value = JSON.parse(r.value) as unknown;
    if (!ajv.validate(m.payload, value)) throw new Error(`${name} value: ${ajv.errorsText()} in ${r.value}`);
    if (m.headers) {
      const headers = schemas[m.headers.$ref.split('/').pop() as string];
      if (!ajv.validate(headers, r.headers)) throw new Error(`${name} headers: ${ajv.errorsText()}`);
    }
  };

  const bad = await new Receiver(() => ({ status: 500 })).start();
  receivers.push(bad);
  const submit = (input: object, extra: object = {}) =>
    http(service.url, '/tasks', { body: { type: 'countdown', input, ...extra } });
  const ok = await submit({ steps: 1, stepMs: 0 }, { callbackUrl: `${bad.url}/dead`, mode: 'once' });
  const failed = await submit({ steps: 2, stepMs: 0, failAt: 1 });
  const slow = await submit({ steps: 100, stepMs: 100 });
  // Each accepted: a 503 here would leave a task that never runs, and the wait below would say only that.
  expect([ok.status, failed.status, slow.status]).toEqual([202, 202, 202]);
  const slowHref = `/tasks/${slow.body.taskId}`;
  await until(async () => ((await http(service.url, slowHref)).body.status === 'running' ? true : undefined));
  expect((await http(service.url, slowHref, { method: 'PATCH', body: { status: 'cancelled' } })).status).toBe(202);
  // With its relations: the events carry them as ids, and the document must say so (its data lists every member).
  const withRelations = { orderNumber: 7, itemCount: 1, status: 'open', author: 'u-ada', items: ['i-widget'] };
  const order = await http(service.url, '/orders', { body: withRelations });
  expect(order.status).toBe(201);
  const href = order.headers.get('location') as string;
  expect((await http(service.url, href, { method: 'PATCH', body: { status: 'paid' } })).status).toBe(200);
  expect((await http(service.url, href, { method: 'DELETE' })).status).toBe(204);

  const ids = new Set([ok, failed, slow].map((r) => r.body.taskId as string));
  for (const r of await records(service.kafka.topics.taskRequests, (k) => ids.has(k), 3)) {
    check('taskRequests', 'task.request', r);
  }
  // accepted, started, progress, succeeded / accepted, started, failed / accepted, started, progress…, cancelled
  const events = await until(
    async () => {
      const all = await records(service.kafka.topics.taskEvents, (k) => ids.has(k), 9);
      return ['task.succeeded', 'task.failed', 'task.cancelled'].every((e) => all.some((r) => r.headers.ce_type === e))
        ? all
        : undefined;
    },
    30000,
    500,
  );
  for (const r of events) check('taskEvents', r.headers.ce_type, r);
  const key = href.replace(/^\//, '');
  const changes = await records(service.kafka.topics.domainEvents, (k) => k === key, 3);
  expect(changes.map((r) => r.headers.ce_type)).toEqual(['order.created', 'order.updated', 'order.deleted']);
  for (const r of changes) check('domainEvents', r.headers.ce_type, r);
  // What is always on the records is declared so: relations in a change's data, a task event's subject, time and
  // tenant, and the trace context a producer of task requests may send.
  const created = doc.components.messages.orderCreated.payload as { properties: { data: { properties: object } } };
  expect(Object.keys(created.properties.data.properties)).toEqual(expect.arrayContaining(['author', 'items']));
  expect(schemas.taskEventHeaders).toMatchObject({
    required: expect.arrayContaining(['ce_subject', 'ce_time', 'ce_tenant']),
  });
  expect(messageOf('taskRequests', 'task.request').headers).toEqual({
    $ref: '#/components/schemas/taskRequestHeaders',
  });
  expect(schemas.taskRequestHeaders).toMatchObject({ properties: { traceparent: expect.any(Object) } });
  const [dead] = await records(service.kafka.topics.callbackDeadLetters, () => true, 1);
  check('callbackDeadLetters', 'callback.dead-lettered', dead);
}, 90000);
