import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * A runner stopped gracefully (SIGTERM) while short tasks run lets them end where they run: they finish as attempt 1,
 * not handed back and started over by the next runner. The api runs in this process, the runners as
 * processes of their own. The shared test broker stays up.
 */
const TASKS = 4;

describe('a runner stopped with SIGTERM', () => {
  const prefix = uniquePrefix('runner-sigterm');
  let api: RunningService;
  const runners: ChildService[] = [];

  beforeAll(async () => {
    api = await startTestService(prefix, { role: 'api' });
    runners.push(await startChildService('runner', prefix));
  }, 180000);

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.kill('SIGKILL')));
    await api?.stop();
  }, 60000);

  test('lets the runs under way end there: each task succeeds as attempt 1', async () => {
    const url = api.url as string;
    const ids: string[] = [];
    for (let i = 0; i < TASKS; i++) {
      // About 1.5 s each: well within the 5 s the stop gives them.
      const res = await http(url, '/tasks', { body: { type: 'countdown', input: { steps: 3, stepMs: 500 } } });
      expect(res.status).toBe(202);
      ids.push(res.body.taskId);
    }
    const status = async (id: string) => (await http(url, `/tasks/${id}`)).body;
    await until(
      async () => (await Promise.all(ids.map(status))).every((t) => t.status === 'running') || undefined,
      60000,
    );
    expect(await runners[0].kill('SIGTERM')).toBe(0);
    // Its successor comes after it: one joining the group meanwhile would take the partitions back at once (a
    // rebalance hands back what runs on them, grace or not).
    runners.push(await startChildService('runner', prefix));
    const finals = await until(async () => {
      const all = await Promise.all(ids.map(status));
      return all.every((t) => ['succeeded', 'failed', 'cancelled'].includes(t.status)) ? all : undefined;
    }, 60000);
    expect(finals.map((t) => [t.status, t.attempt])).toEqual(ids.map(() => ['succeeded', 1]));
  }, 240000);
});
