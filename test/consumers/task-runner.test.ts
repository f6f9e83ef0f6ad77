import { untilGroupStable } from '../support/consumer-group';
import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { readTaskEvents } from '../support/event-reader';
import { http } from '../support/http';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/** The runner as separate processes on the real broker. */

describe('task runner processes', () => {
  let api: RunningService;
  const children: ChildService[] = [];

  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.kill('SIGTERM')));
    await api?.stop();
  });

  const finished = (taskId: string, timeoutMs = 60000) =>
    until(async () => {
      const b = (await http(api.url, `/tasks/${taskId}`)).body;
      return ['succeeded', 'failed', 'cancelled'].includes(b.status) ? b : undefined;
    }, timeoutMs);

  test('two runner processes share the work of one consumer group', async () => {
    const prefix = uniquePrefix('runners');
    api = await startTestService(prefix, { role: 'api' });
    children.push(await startChildService('runner', prefix), await startChildService('runner', prefix));
    // Both members must have joined before any work arrives, or the first would take it all.
    await untilGroupStable(`${prefix}task-runner`, 2);
    // 30 random keys over 3 partitions split 2:1: all on one member has odds of about (2/3)^30.
    const submitted = await Promise.all(
      Array.from({ length: 30 }, () =>
        http(api.url, '/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 50 } } }),
      ),
    );
    const runners = new Set<string>();
    for (const { body } of submitted) {
      expect((await finished(body.taskId)).status).toBe('succeeded');
      const events = await readTaskEvents(testBrokers(), {
        topic: body.topic,
        partition: body.partition,
        offset: body.offset,
        key: body.taskId,
      });
      runners.add(String(events.find((e) => e.value.event === 'task.started')?.value.data.runner));
    }
    expect(runners.size).toBe(2);
  }, 120000);

  test('a runner killed mid-task (SIGKILL) loses nothing: the task is run again and ends with exactly one final event', async () => {
    const prefix = uniquePrefix('sigkill');
    api = await startTestService(prefix, { role: 'api' });
    const doomed = await startChildService('runner', prefix);
    const { body } = await http(api.url, '/tasks', { body: { type: 'countdown', input: { steps: 20, stepMs: 250 } } });
    await until(
      async () => ((await http(api.url, `/tasks/${body.taskId}`)).body.progress?.current >= 3 ? true : undefined),
      30000,
    );
    expect(await doomed.kill('SIGKILL')).toBeNull();
    children.push(await startChildService('runner', prefix));

    const done = await finished(body.taskId, 90000);
    expect(done).toMatchObject({ status: 'succeeded', result: { steps: 20 }, attempt: 2 });
    const events = await readTaskEvents(testBrokers(), {
      topic: body.topic,
      partition: body.partition,
      offset: body.offset,
      key: body.taskId,
    });
    const kinds = events.map((e) => e.value.event);
    expect(kinds.filter((k) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(k))).toEqual([
      'task.succeeded',
    ]);
    expect(events.filter((e) => e.value.event === 'task.started').map((e) => e.value.attempt)).toEqual([1, 2]);
  }, 150000);
});
