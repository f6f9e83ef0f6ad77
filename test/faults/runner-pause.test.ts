import type { RunningService } from '../../src/service';
import { problemType } from '../../src/problems/problem-types';
import { startChildService, type ChildService } from '../support/child-service';
import { untilGroupStable } from '../support/consumer-group';
import { awaitFinalStatuses } from '../support/final-statuses';
import { http } from '../support/http';
import { FINAL_EVENTS, finalsOf, orderProblem, TaskEventLog } from '../support/task-event-log';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * README "No task stays running forever" and "Cancel", on a day the runner's process stops for a while (SIGSTOP
 * here; a frozen VM or a long GC does the same), for less than its group session: it keeps its partitions and, when
 * it runs again, every timer due meanwhile fires at once, in due order, before it reads what Kafka got meanwhile.
 *
 * Short tasks are mid-run when the runner stops; their deadline passes during the pause and their handlers would end
 * right after it: each must fail `task-timed-out`, not succeed late. Long tasks are cancelled during the pause (the api
 * answers 202), before their deadlines: each must end `cancelled`, not timed out because the deadline's timer fired
 * before the runner read the cancel. Every task: exactly one final event, its events in a valid order.
 */
const TASK_TIMEOUT_MS = 4000;
/** Shorter than the group session (10 s): the runner keeps its partitions; longer than every deadline left. */
const PAUSE_MS = 6000;
// One step: its one timer, due before the deadline's, is what fires first when the runner runs again.
const SHORT = { type: 'countdown', input: { steps: 1, stepMs: 2500 } };
const LONG = { type: 'countdown', input: { steps: 60, stepMs: 250 } };
const EACH = 4;

describe('a runner paused past its tasks deadlines', () => {
  const prefix = uniquePrefix('runner-pause');
  let api: RunningService;
  let runner: ChildService;
  let log: TaskEventLog | undefined;

  // Above the sum of its bounds: the api's start 120 s (KAFKA_STARTUP_TIMEOUT_MS), the runner's 60 s, the group's 60 s.
  beforeAll(async () => {
    const env = { KAFKA_TIMEOUT_MS: '3000', TASK_TIMEOUT_MS: String(TASK_TIMEOUT_MS) };
    api = await startTestService(prefix, { role: 'api', env });
    runner = await startChildService('runner', prefix, env);
    await untilGroupStable(`${prefix}task-runner`, 1);
  }, 300000);

  afterAll(async () => {
    if (runner?.running) runner.process.kill('SIGCONT');
    await log?.stop().catch(() => undefined);
    await runner?.kill('SIGKILL');
    await api?.stop();
  }, 60000);

  const status = async (id: string) => (await http(api.url, `/tasks/${id}`)).body?.status as string;

  // Above the sum of its bounds: 30 s for the starts, the pause, 60 s for the final statuses, 60 s for the log.
  test('late results time out and cancels accepted in time win: one final event each', async () => {
    const submit = async (body: unknown) => {
      const res = await http(api.url, '/tasks', { body });
      expect(res.status).toBe(202);
      return res.body.taskId as string;
    };
    const short = await Promise.all(Array.from({ length: EACH }, () => submit(SHORT)));
    const long = await Promise.all(Array.from({ length: EACH }, () => submit(LONG)));
    await until(
      async () => ((await Promise.all(short.map(status))).every((s) => s !== 'accepted') ? true : undefined),
      30000,
      20,
      'every short task started',
    );
    runner.process.kill('SIGSTOP');
    const pausedAt = Date.now();
    // A short task still running now is caught mid-run: its handler ends only after the pause.
    const caught = (
      await Promise.all(short.map(async (id) => ((await status(id)) === 'running' ? id : undefined)))
    ).filter((id): id is string => id !== undefined);
    const cancels = await Promise.all(
      long.map(async (id) => {
        const res = await http(api.url, `/tasks/${id}`, { method: 'PATCH', body: { status: 'cancelled' } });
        return { status: res.status, at: Date.now() };
      }),
    );
    await new Promise((r) => setTimeout(r, Math.max(0, pausedAt + PAUSE_MS - Date.now())));
    runner.process.kill('SIGCONT');

    const all = [...short, ...long];
    const statuses = await awaitFinalStatuses(api.url, all, 60000);
    log = await new TaskEventLog(testBrokers(), api.kafka.topics.taskEvents).start();
    await log.catchUp(60000);
    const byTask = log.byTask;
    const finalOf = (id: string) => {
      const final = (byTask.get(id) ?? []).find((e) => FINAL_EVENTS.includes(e.kind));
      const problem = final?.data.problem as { type?: string } | undefined;
      return problem?.type === problemType('task-timed-out') ? 'timed-out' : final?.kind;
    };
    // A long task's cancel wins when it was accepted before the task's deadline (or before it started at all), as
    // the test's clock tells: a busy machine may have started one so early that its deadline came first.
    const startedAt = await Promise.all(
      long.map(async (id) => Date.parse((await http(api.url, `/tasks/${id}`)).body?.startedAt ?? '')),
    );
    const expectedLong = long.map((_, i) =>
      !(startedAt[i] + TASK_TIMEOUT_MS <= cancels[i].at) ? 'task.cancelled' : 'timed-out',
    );
    const figures = {
      caught: caught.length,
      cancelAnswers: cancels.map((c) => c.status),
      cancelsAfterPauseMs: cancels.map((c) => c.at - pausedAt),
      short: caught.map(finalOf),
      long: long.map(finalOf),
      expectedLong,
      statuses: all.map((id) => statuses.get(id)),
      finals: all.map((id) => finalsOf(byTask.get(id))),
      orderProblems: all.map((id) => orderProblem(byTask.get(id) ?? [])).filter((p) => p !== undefined),
    };
    console.log(`runner-pause: ${JSON.stringify(figures)} log: ${runner.logFile}`);

    // Some short tasks were mid-run, or this would prove nothing about late results; some cancels came in time.
    expect(figures.caught).toBeGreaterThan(0);
    expect(expectedLong).toContain('task.cancelled');
    expect(figures.cancelAnswers).toEqual(long.map(() => 202));
    expect(figures.short).toEqual(caught.map(() => 'timed-out'));
    expect(figures.long).toEqual(expectedLong);
    expect(figures.finals).toEqual(all.map(() => 1));
    expect(figures.orderProblems).toEqual([]);
  }, 300000);
});
