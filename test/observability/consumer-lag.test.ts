import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * The signal an operator scales runners by: with every runner slot busy, the requests that wait are lag, on whichever
 * partition they wait. Counted only from the batch kafkajs was handing out, a runner at TASK_CONCURRENCY showed 0-2
 * while eight requests waited.
 */
const prefix = uniquePrefix('lag');
let service: RunningService;

beforeAll(async () => {
  service = await startTestService(prefix, { role: 'all', env: { TASK_CONCURRENCY: '1' } });
});
afterAll(() => service?.stop());

async function scrape(): Promise<{ lag: number; finished: number }> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const sum = (prefixOf: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith(prefixOf))
      .reduce((s, l) => s + Number(l.split(' ').pop()), 0);
  return {
    lag: sum(`hookstream_kafka_consumer_lag{group="${prefix}task-runner"`),
    finished: sum('hookstream_tasks_finished_total{'),
  };
}

test('requests waiting for a busy runner are its consumer lag, on whichever partition they wait', async () => {
  const tasks = 8;
  const before = (await scrape()).finished;
  const submitted = await Promise.all(
    Array.from({ length: tasks }, () =>
      http(service.url, '/tasks', { body: { type: 'countdown', input: { steps: 3, stepMs: 1000 } } }),
    ),
  );
  for (const r of submitted) expect(r.status).toBe(202);
  // One runs at a time, for 3 s each: for a while, at least five wait. Each one waiting (or running) is lag.
  const seen = await until(async () => {
    const { lag, finished } = await scrape();
    const unfinished = tasks - (finished - before);
    return unfinished >= 5 && lag >= unfinished ? { lag, unfinished } : undefined;
  }, 12000);
  expect(seen.lag).toBeGreaterThanOrEqual(seen.unfinished);
  // Offsets, not records: each request's transaction adds its commit marker, and no more.
  expect(seen.lag).toBeLessThanOrEqual(2 * tasks);
  // Once every one has finished, nothing is lag: the partitions' transaction markers are not records that wait.
  await until(async () => {
    const { lag, finished } = await scrape();
    return finished - before === tasks && lag === 0 ? true : undefined;
  }, 45000);
}, 90000);
