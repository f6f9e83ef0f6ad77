import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * GET /metrics after real traffic on the real broker: tasks that succeed and fail, callbacks that are delivered
 * and that fail until dead-lettered, a request no route matches. Every figure is read as a difference between
 * two scrapes, in Prometheus' text format as a scraper parses it.
 */
let service: RunningService;
const receivers: Receiver[] = [];

beforeAll(async () => {
  service = await startTestService(uniquePrefix('metrics'), {
    role: 'all',
    env: { CALLBACK_MAX_ATTEMPTS: '2', CALLBACK_BACKOFF_BASE_MS: '10', CALLBACK_BACKOFF_MAX_MS: '20' },
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.stop()));
  await service.stop();
});

type Samples = Map<string, number>;

/** `name{labels} value` lines into name{labels} → value; throws on a line that is neither that nor a comment. */
function parse(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    samples.set(m[1], Number(m[2]));
  }
  return samples;
}

async function scrape(): Promise<Samples> {
  const res = await fetch(`${service.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(await res.text());
}

const delta = (before: Samples, after: Samples, name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);

test('tasks, callbacks, requests and consumer lag move as the traffic did; no key needed', async () => {
  const good = await new Receiver(() => ({ status: 204 })).start();
  const bad = await new Receiver(() => ({ status: 500 })).start();
  receivers.push(good, bad);
  const before = await scrape();

  const submit = (input: object, callbackUrl: string) =>
    http(service.url, '/tasks', { body: { type: 'countdown', input, callbackUrl, mode: 'once' } });
  const ok = await Promise.all([1, 2, 3].map(() => submit({ steps: 1, stepMs: 0 }, `${good.url}/ok`)));
  const failing = await submit({ steps: 2, stepMs: 0, failAt: 1 }, `${good.url}/ok`);
  const dead = await submit({ steps: 1, stepMs: 0 }, `${bad.url}/fails`);
  for (const r of [...ok, failing, dead]) expect(r.status).toBe(202);
  expect((await http(service.url, '/no-such-route')).status).toBe(404);

  // Every once subscription ends: four delivered, one dead-lettered after its two attempts.
  await until(async () => (good.received.length >= 4 && bad.received.length >= 2 ? true : undefined), 30000);
  const after = await until(async () => {
    const s = await scrape();
    return delta(before, s, 'hookstream_callback_attempts_total{outcome="dead-lettered"}') >= 1 ? s : undefined;
  }, 30000);

  expect(delta(before, after, 'hookstream_tasks_accepted_total')).toBe(5);
  expect(delta(before, after, 'hookstream_tasks_finished_total{outcome="succeeded"}')).toBe(4);
  expect(delta(before, after, 'hookstream_tasks_finished_total{outcome="failed"}')).toBe(1);
  expect(delta(before, after, 'hookstream_task_duration_seconds_count{type="countdown"}')).toBe(5);
  expect(delta(before, after, 'hookstream_callback_attempts_total{outcome="delivered"}')).toBe(4);
  expect(delta(before, after, 'hookstream_callback_attempts_total{outcome="failed"}')).toBe(2);
  expect(delta(before, after, 'hookstream_callback_duration_seconds_count')).toBe(6);
  const posts = 'http_request_duration_seconds_count{method="POST",route="/tasks",status_code="202"}';
  expect(delta(before, after, posts)).toBe(5);
  const unmatched = 'http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}';
  expect(delta(before, after, unmatched)).toBe(1);
  const prefix = service.kafka.topics.taskRequests.slice(0, -'task-requests'.length);
  const lagOf = (group: string) =>
    [...after.keys()].filter((k) => k.startsWith(`hookstream_kafka_consumer_lag{group="${group}"`));
  expect(lagOf(`${prefix}task-runner`).length).toBeGreaterThan(0);
  expect(lagOf(`${prefix}callback-bridge`).length).toBeGreaterThan(0);
  expect(after.get('process_cpu_user_seconds_total')).toBeGreaterThan(0);
}, 60000);
