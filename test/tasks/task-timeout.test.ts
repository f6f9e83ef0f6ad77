import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/** TASK_TIMEOUT_MS bounds a run: a task still running then ends in task.failed with a task-timed-out Problem. */
let service: RunningService;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('timeout'), { role: 'all', env: { TASK_TIMEOUT_MS: '500' } });
});
afterAll(() => service.stop());

test('a run longer than TASK_TIMEOUT_MS fails with task-timed-out; a shorter one succeeds', async () => {
  const long = await http(service.url, '/tasks', { body: { type: 'countdown', input: { steps: 50, stepMs: 100 } } });
  const short = await http(service.url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 10 } } });
  const final = (id: string) =>
    until(async () => {
      const t = (await http(service.url, `/tasks/${id}`)).body;
      return ['succeeded', 'failed', 'cancelled'].includes(t.status) ? t : undefined;
    });
  const [timedOut, quick] = await Promise.all([final(long.body.taskId), final(short.body.taskId)]);
  expect(timedOut.status).toBe('failed');
  expect(timedOut.problem).toMatchObject({ type: 'https://hookstream.dev/problems/task-timed-out', status: 504 });
  expect(quick.status).toBe('succeeded');
});
