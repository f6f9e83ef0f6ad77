import type { ServiceMetrics, TaskOutcome } from '../../src/metrics/metrics';
import { cancelKey } from '../../src/tasks/task-snapshot';
import { FakeLog, request, runner, startedBefore } from './runner-fakes';

/*
 * hookstream_task_duration_seconds is "from a run's task.started to its final event" (README, Metrics). A task run
 * again after its runner died once counted from the first attempt's start: the time no runner ran it included.
 */
function recordingMetrics() {
  const finished: { outcome: TaskOutcome; seconds: number | undefined }[] = [];
  const metrics: ServiceMetrics = {
    taskAccepted: () => undefined,
    taskFinished: (outcome, _type, seconds) => finished.push({ outcome, seconds }),
    callbackAttempt: () => undefined,
    watchCallbackBacklogs: () => () => undefined,
  };
  return { metrics, finished };
}

test('a run again after a runner died is timed from its own start, not the first attempt', async () => {
  const log = new FakeLog();
  const { metrics, finished } = recordingMetrics();
  // The first attempt started 5 s ago on a runner that died; 5 s of the 10 s deadline are left.
  startedBefore(log, 'again', 5000);
  const handle = await runner(log, undefined, { metrics });
  await handle(request('again', 1, { steps: 1, stepMs: 0 }), new AbortController().signal);
  expect(log.finals('again')).toEqual(['task.succeeded']);
  expect(finished).toEqual([{ outcome: 'succeeded', seconds: expect.any(Number) }]);
  expect(finished[0].seconds).toBeLessThan(4);
});

test('a task cancelled before any run is counted, and no duration is observed for it', async () => {
  const log = new FakeLog();
  const { metrics, finished } = recordingMetrics();
  log.view.set(cancelKey('never'), { cancel: true, taskId: 'never', requestedAt: new Date().toISOString() });
  const handle = await runner(log, undefined, { metrics });
  await handle(request('never', 0), new AbortController().signal);
  expect(log.finals('never')).toEqual(['task.cancelled']);
  expect(finished).toEqual([{ outcome: 'cancelled', seconds: undefined }]);
});
