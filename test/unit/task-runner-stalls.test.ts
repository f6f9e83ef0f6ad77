import { sleep } from '../../src/lib/abortable-sleep';
import { problemType } from '../../src/problems/problem-types';
import { cancelKey } from '../../src/tasks/task-snapshot';
import { defineTaskType, type TaskContext, type TaskType } from '../../src/tasks/task-type';
import { FakeLog, request, runner, startedBefore, topics } from './runner-fakes';

/*
 * One deadline and an accepted cancel, on a day the runner's process stops for a while (SIGSTOP, a frozen VM, a long
 * GC): its timers then fire late and in due order, and its view is as old as the stall. A synchronous busy wait
 * stops the event loop as a SIGSTOP does; the fault tests do the same to a real runner process on a real broker.
 */

/** Blocks the event loop, as a stopped process's is: no timer and no fetch answer is handled meanwhile. */
function stall(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // spinning on purpose
  }
}

const type = (timeoutMs: number, run: (c: TaskContext<unknown>) => Promise<unknown>): TaskType =>
  defineTaskType({ name: 'countdown', description: 'a test run', inputSchema: { type: 'object' }, timeoutMs, run });

/** Ends only when its signal says so. */
const untilAborted = ({ signal }: TaskContext<unknown>) =>
  new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));

const finalsOf = (log: FakeLog, taskId: string) =>
  log.records
    .filter((r) => r.topic === topics.taskEvents && r.key === taskId)
    .map((r) => JSON.parse(String(r.value)))
    .filter((e) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(e.event));

/** A cancel the api accepted at `at`, committed to the tasks topic, which the runner's view reads only on a sync. */
function cancelUnseen(log: FakeLog, taskId: string, at: number): void {
  const value = { cancel: true as const, taskId, requestedAt: new Date(at).toISOString() };
  log.view.commitElsewhere(() => log.view.set(cancelKey(taskId), value));
}

describe('task runner: a run that ends after a stall', () => {
  test('a result that comes after the deadline (its timer held back by a stall) is too late: task-timed-out', async () => {
    const log = new FakeLog();
    let returned = false;
    const late = type(300, async () => {
      await sleep(20, new AbortController().signal);
      stall(700);
      returned = true;
      return { done: true };
    });
    const handle = await runner(log, [late]);
    await handle(request('late-result', 0), new AbortController().signal);
    expect(returned).toBe(true);
    const finals = finalsOf(log, 'late-result');
    expect(finals.map((e) => e.event)).toEqual(['task.failed']);
    expect(finals[0].data.problem.type).toBe(problemType('task-timed-out'));
    expect(log.view.get('late-result')).toMatchObject({ status: 'failed' });
  });

  test('a cancel accepted before the deadline wins over the timer that fired before the view read it', async () => {
    const log = new FakeLog();
    const handle = await runner(log, [type(300, untilAborted)]);
    const running = handle(request('cancel-first', 0), new AbortController().signal);
    await sleep(100, new AbortController().signal);
    cancelUnseen(log, 'cancel-first', Date.now());
    await running;
    expect(finalsOf(log, 'cancel-first').map((e) => e.event)).toEqual(['task.cancelled']);
    expect(log.view.get('cancel-first')).toMatchObject({ status: 'cancelled' });
  });

  test('a cancel accepted after the deadline leaves the task timed out', async () => {
    const log = new FakeLog();
    const handle = await runner(log, [type(300, untilAborted)]);
    const running = handle(request('deadline-first', 0), new AbortController().signal);
    await sleep(100, new AbortController().signal);
    cancelUnseen(log, 'deadline-first', Date.now() + 5000);
    await running;
    const finals = finalsOf(log, 'deadline-first');
    expect(finals.map((e) => e.event)).toEqual(['task.failed']);
    expect(finals[0].data.problem.type).toBe(problemType('task-timed-out'));
    // The sync did happen: the cancel is in the view now, and it did not change the outcome.
    expect(log.view.get(cancelKey('deadline-first'))).toBeDefined();
  });

  test('a result after a stall in which a cancel was accepted ends cancelled, within the deadline', async () => {
    const log = new FakeLog();
    const paused = type(60000, async () => {
      await sleep(20, new AbortController().signal);
      cancelUnseen(log, 'cancel-in-stall', Date.now());
      stall(800);
      return { done: true };
    });
    const handle = await runner(log, [paused]);
    await handle(request('cancel-in-stall', 0), new AbortController().signal);
    expect(finalsOf(log, 'cancel-in-stall').map((e) => e.event)).toEqual(['task.cancelled']);
  });

  test('a rerun that begins past the deadline looks for a cancel accepted before it, which the view had not read', async () => {
    const log = new FakeLog();
    let ran = false;
    const handle = await runner(log, [
      type(60000, async () => {
        ran = true;
        return {};
      }),
    ]);
    // The partition's writer is checked (and the view synced) by a first task: the rerun's own check is then no sync.
    await handle(request('warm-up', 0), new AbortController().signal);
    ran = false;
    startedBefore(log, 'rerun-cancelled', 61000);
    cancelUnseen(log, 'rerun-cancelled', Date.now() - 30000);
    await handle(request('rerun-cancelled', 1), new AbortController().signal);
    expect(ran).toBe(false);
    expect(finalsOf(log, 'rerun-cancelled').map((e) => e.event)).toEqual(['task.cancelled']);
  });

  test('a result in time stays in time however long the look for a cancel takes: finishedAt is when it came', async () => {
    const log = new FakeLog();
    const handle = await runner(log, [type(300, async () => ({ done: true }))], { stalls: { since: () => true } });
    await handle(request('warm-up', 0), new AbortController().signal);
    const sync = log.view.syncedSince.bind(log.view);
    log.view.syncedSince = async (time?: number) => {
      await sleep(600, new AbortController().signal);
      return sync(time);
    };
    await handle(request('slow-look', 1), new AbortController().signal);
    const [final] = finalsOf(log, 'slow-look');
    expect(final.event).toBe('task.succeeded');
    const snapshot = log.view.get('slow-look') as { startedAt: string; finishedAt: string };
    expect(Date.parse(snapshot.finishedAt) - Date.parse(snapshot.startedAt)).toBeLessThan(300);
  });

  test('without a stall, a result within the deadline is written without a sync of the view first', async () => {
    // The common path stays one write: the view is trusted as fresh when the process ran throughout.
    const log = new FakeLog();
    const handle = await runner(log, [type(60000, async () => ({ done: true }))], { stalls: { since: () => false } });
    await handle(request('warm-up', 0), new AbortController().signal);
    const syncs = log.view.syncs;
    await handle(request('quick', 1), new AbortController().signal);
    expect(log.view.syncs).toBe(syncs);
    expect(finalsOf(log, 'quick').map((e) => e.event)).toEqual(['task.succeeded']);
  });
});
