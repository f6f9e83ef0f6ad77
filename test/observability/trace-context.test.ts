import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { startChildService } from '../support/child-service';
import { http } from '../support/http';
import { listenOnLoopback, Receiver } from '../support/receiver';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * One trace id from the HTTP request through the Kafka records (the task request, every task event) to the
 * callback POSTs, across the api, the runner and the bridge, on the real broker.
 */
let service: RunningService;
const receivers: Receiver[] = [];
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const traceIdOf = (traceparent: string | undefined) =>
  /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1];

beforeAll(async () => {
  service = await startTestService(uniquePrefix('trace'), { role: 'all' });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await service.stop();
});

/** traceparent headers of the records with this key, once `count` of them were read */
async function recordTraces(topic: string, key: string, count: number): Promise<(string | undefined)[]> {
  const kafka = new Kafka({ clientId: 'trace-test', brokers: testBrokers(), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: uniquePrefix('trace-reader') });
  const found: (string | undefined)[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.key?.toString() === key) found.push(message.headers?.traceparent?.toString());
      },
    });
    await until(async () => (found.length >= count ? true : undefined), 20000);
  } finally {
    await consumer.disconnect();
  }
  return found;
}

test('a traceparent on POST /tasks reaches the task request, every task event and every callback', async () => {
  const receiver = await new Receiver(() => ({ status: 204 })).start();
  receivers.push(receiver);
  const res = await http(service.url, '/tasks', {
    headers: { traceparent: PARENT },
    body: { type: 'countdown', input: { steps: 2, stepMs: 0 }, callbackUrl: `${receiver.url}/cb`, mode: 'continuous' },
  });
  expect(res.status).toBe(202);
  expect(traceIdOf(res.headers.get('traceparent') ?? undefined)).toBe(TRACE_ID);
  const taskId = res.body.taskId as string;

  // accepted, started, 2 × progress, succeeded
  const callbacks = await receiver.waitFor(5);
  expect(callbacks.map((c) => c.json.event)).toEqual([
    'task.accepted',
    'task.started',
    'task.progress',
    'task.progress',
    'task.succeeded',
  ]);
  for (const c of callbacks) expect(traceIdOf(c.headers.traceparent as string)).toBe(TRACE_ID);
  const requests = await recordTraces(service.kafka.topics.taskRequests, taskId, 1);
  const events = await recordTraces(service.kafka.topics.taskEvents, taskId, 5);
  for (const t of [...requests, ...events]) expect(traceIdOf(t)).toBe(TRACE_ID);
  // Each hop is a span of its own: the api's records name the request's span, the runner's events its run's,
  // and each callback an attempt's.
  const requestSpan = res.headers.get('traceparent');
  expect([requests[0], events[0]]).toEqual([requestSpan, requestSpan]);
  const runSpans = new Set(events.slice(1));
  expect(runSpans.size).toBe(1);
  expect(runSpans.has(requestSpan ?? '')).toBe(false);
  const callbackSpans = new Set(callbacks.map((c) => c.headers.traceparent));
  expect(callbackSpans.size).toBe(callbacks.length);
  for (const s of [requestSpan, ...runSpans]) expect(callbackSpans.has(s ?? '')).toBe(false);
});

test('a traceparent on a resource write reaches its domain event: created, updated and deleted', async () => {
  const spans: (string | null)[] = [];
  const created = await http(service.url, '/orders', {
    headers: { traceparent: PARENT },
    body: { orderNumber: 1, itemCount: 2, status: 'open' },
  });
  expect(created.status).toBe(201);
  spans.push(created.headers.get('traceparent'));
  const href = created.headers.get('location') as string;
  const patched = await http(service.url, href, {
    method: 'PATCH',
    headers: { traceparent: PARENT },
    body: { status: 'paid' },
  });
  spans.push(patched.headers.get('traceparent'));
  const deleted = await http(service.url, href, { method: 'DELETE', headers: { traceparent: PARENT } });
  spans.push(deleted.headers.get('traceparent'));
  expect([created.status, patched.status, deleted.status]).toEqual([201, 200, 204]);
  // Each record names the span of the request that wrote it.
  expect(await recordTraces(service.kafka.topics.domainEvents, href.replace(/^\//, ''), 3)).toEqual(spans);
});

test('a task is submitted under an Idempotency-Key, run and called back without entering an AsyncLocalStorage', async () => {
  // Entering one turns on promise hooks for the whole process, at about a tenth of the CPU of every role: the
  // request's span and its keyed creation, and the run's span, are handed down instead.
  const run = jest.spyOn(AsyncLocalStorage.prototype, 'run');
  const enterWith = jest.spyOn(AsyncLocalStorage.prototype, 'enterWith');
  const receiver = await new Receiver(() => ({ status: 204 })).start();
  receivers.push(receiver);
  try {
    const submit = () =>
      http(service.url, '/tasks', {
        headers: { traceparent: PARENT, 'idempotency-key': '"no-async-local-storage"' },
        body: { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: `${receiver.url}/cb`, mode: 'once' },
      });
    const res = await submit();
    expect(res.status).toBe(202);
    const repeat = await submit();
    expect([repeat.status, repeat.headers.get('idempotent-replayed'), repeat.body.taskId]).toEqual([
      202,
      'true',
      res.body.taskId,
    ]);
    const [callback] = await receiver.waitFor(1);
    expect(traceIdOf(callback.headers.traceparent as string)).toBe(TRACE_ID);
    expect(run).not.toHaveBeenCalled();
    expect(enterWith).not.toHaveBeenCalled();
  } finally {
    run.mockRestore();
    enterWith.mockRestore();
  }
});

test('an invalid traceparent starts a new trace instead of failing the request', async () => {
  const res = await http(service.url, '/tasks', {
    headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' },
    body: { type: 'countdown', input: { steps: 1, stepMs: 0 } },
  });
  expect(res.status).toBe(202);
  const traceId = traceIdOf(res.headers.get('traceparent') ?? undefined);
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(traceId).not.toBe('0'.repeat(32));
  const [request] = await recordTraces(service.kafka.topics.taskRequests, res.body.taskId, 1);
  expect(traceIdOf(request)).toBe(traceId);
});

test('with OTEL_EXPORTER_OTLP_ENDPOINT set, the spans of the request, the run and the callbacks are exported', async () => {
  const exported: { name: string; traceId: string; parentSpanId?: string }[] = [];
  const collector = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const sent = JSON.parse(body) as OtlpExport;
      for (const r of sent.resourceSpans) for (const s of r.scopeSpans) for (const span of s.spans) exported.push(span);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const endpoint = await listenOnLoopback(collector);
  // Its own process: the OTLP exporter loads its transport with a dynamic import, which jest's module sandbox
  // refuses. SIGTERM stops it as an operator would, which flushes the spans still buffered.
  const traced = await startChildService('all', uniquePrefix('otlp'), {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  });
  const receiver = await new Receiver(() => ({ status: 204 })).start();
  receivers.push(receiver);
  try {
    const res = await http(traced.url ?? '', '/tasks', {
      headers: { traceparent: PARENT },
      body: { type: 'countdown', input: { steps: 1, stepMs: 0 }, callbackUrl: `${receiver.url}/cb`, mode: 'once' },
    });
    expect(res.status).toBe(202);
    await receiver.waitFor(1);
  } finally {
    expect(await traced.kill('SIGTERM')).toBe(0);
    collector.close();
  }
  const mine = exported.filter((s) => s.traceId === TRACE_ID);
  const names = mine.map((s) => s.name);
  expect(names).toEqual(expect.arrayContaining(['POST /tasks', 'run task', 'callback task.succeeded']));
  expect(mine.find((s) => s.name === 'POST /tasks')?.parentSpanId).toBe('00f067aa0ba902b7');
});

test('spans the collector does not take are told in the log, not dropped in silence', async () => {
  // A collector that refuses them at once (a 400 is not retried; a refused connection is, for seconds).
  const refusing = createServer((req, res) => req.resume().on('end', () => res.writeHead(400).end()));
  const endpoint = await listenOnLoopback(refusing);
  const traced = await startChildService('api', uniquePrefix('otlp-down'), {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    LOG_LEVEL: 'warn',
  });
  const res = await http(traced.url ?? '', '/tasks', {
    body: { type: 'countdown', input: { steps: 1, stepMs: 0 } },
  });
  expect(res.status).toBe(202);
  // The stop flushes the spans still buffered: that export is refused.
  expect(await traced.kill('SIGTERM')).toBe(0);
  refusing.close();
  const told = readFileSync(traced.logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('trace export failed; spans dropped'))
    .map((l) => JSON.parse(l) as { level: number; url: string });
  expect(told).toEqual([expect.objectContaining({ level: 40, url: `${endpoint}/v1/traces` })]);
});

interface OtlpExport {
  resourceSpans: { scopeSpans: { spans: { name: string; traceId: string; parentSpanId?: string }[] }[] }[];
}
