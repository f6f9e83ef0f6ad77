import { TASKS_VIEW, type TaskRecord, type TaskSnapshot } from '../../src/tasks/task-snapshot';
import { sweepIntervalMs, TaskRetention } from '../../src/tasks/task-retention';
import { TaskStore } from '../../src/tasks/task-store';
import { capturedLogger, FakeKafka, type FakeView } from './fakes';

const RETENTION_MS = 60000;

async function setup() {
  const kafka = new FakeKafka();
  const store = await TaskStore.open(kafka, {
    publisher: kafka.publisher,
    topics: kafka.topics,
    timeoutMs: 1000,
    retentionMs: RETENTION_MS,
  });
  const view = kafka.viewOf(TASKS_VIEW) as FakeView<TaskRecord>;
  const { logger, lines } = capturedLogger();
  return { kafka, store, view, retention: new TaskRetention(store, logger), lines };
}

function finishedTask(taskId: string, finishedAgoMs: number): TaskSnapshot {
  const at = new Date(Date.now() - finishedAgoMs).toISOString();
  return {
    taskId,
    tenant: 't',
    type: 'countdown',
    status: 'succeeded',
    topic: 'events',
    partition: 0,
    offset: 0,
    attempt: 1,
    createdAt: at,
    finishedAt: at,
    updatedAt: at,
  };
}

describe('task retention', () => {
  test('the sweep interval is a tenth of the window, between 0.5 s and a minute', () => {
    expect([1000, 60000, 3_600_000, 86_400_000].map(sweepIntervalMs)).toEqual([500, 6000, 60000, 60000]);
  });

  test('a sweep tombstones finished tasks past their window, with their cancel keys, and nothing else', async () => {
    const { kafka, view, retention, store } = await setup();
    view.set('old', finishedTask('old', RETENTION_MS + 1));
    view.set('recent', finishedTask('recent', 1000));
    view.set('running', { ...finishedTask('running', RETENTION_MS * 2), status: 'running', finishedAt: undefined });
    expect(store.get('old')).toBeUndefined();
    expect(await retention.sweep()).toBe(1);
    expect(kafka.publisher.published.map((r) => [r.key, r.value])).toEqual([
      ['old', null],
      ['cancel/old', null],
    ]);
    expect(view.get('old')).toBeUndefined();
    expect(store.get('recent')?.status).toBe('succeeded');
    expect(view.get('running')).toBeDefined();
  });

  test('a cancel request left without its task (written after its DELETE) is tombstoned alone, once old', async () => {
    const { kafka, view, retention, store } = await setup();
    const cancel = (taskId: string, agoMs: number) => ({
      cancel: true as const,
      taskId,
      requestedAt: new Date(Date.now() - agoMs).toISOString(),
    });
    view.set('cancel/gone', cancel('gone', RETENTION_MS + 1));
    view.set('cancel/just-gone', cancel('just-gone', 1000));
    view.set('live', { ...finishedTask('live', RETENTION_MS * 3), status: 'running', finishedAt: undefined });
    view.set('cancel/live', cancel('live', RETENTION_MS * 2));
    expect(await retention.sweep()).toBe(0);
    // Only the cancel key: the task's own key may hold a task made since under that id.
    expect(kafka.publisher.published.map((r) => [r.key, r.value])).toEqual([['cancel/gone', null]]);
    expect(store.orphanCancels(RETENTION_MS)).toEqual([]);
    expect(view.get('cancel/just-gone')).toBeDefined();
    expect(store.cancelRequested('live')).toBe(true);
  });

  test('a cancel asked of an earlier task under the same id does not count for the task made since', async () => {
    const { view, store } = await setup();
    const made = new Date().toISOString();
    view.set('again', { ...finishedTask('again', 0), status: 'running', finishedAt: undefined, createdAt: made });
    view.set('cancel/again', {
      cancel: true,
      taskId: 'again',
      requestedAt: new Date(Date.now() - 60000).toISOString(),
    });
    expect(store.cancelRequested('again')).toBe(false);
    // One asked of this task, on a clock a little behind the one that made it, counts.
    view.set('cancel/again', { cancel: true, taskId: 'again', requestedAt: new Date(Date.now() - 2000).toISOString() });
    expect(store.cancelRequested('again')).toBe(true);
    // One that names the task it was asked of by its creation time is told apart whatever the clocks say.
    const named = (taskCreatedAt: string) => ({
      cancel: true as const,
      taskId: 'again',
      requestedAt: made,
      taskCreatedAt,
    });
    view.set('cancel/again', named(new Date(Date.now() - 1000).toISOString()));
    expect(store.cancelRequested('again')).toBe(false);
    view.set('cancel/again', named(made));
    expect(store.cancelRequested('again')).toBe(true);
  });

  test('a sweep that fails is logged and the next interval tries again', async () => {
    jest.useFakeTimers();
    try {
      const { kafka, view, retention, lines } = await setup();
      view.set('old', finishedTask('old', RETENTION_MS + 1));
      kafka.publisher.failNext = 1;
      retention.start();
      await jest.advanceTimersByTimeAsync(retention.intervalMs);
      expect(lines.map((l) => l.msg)).toEqual(['could not forget expired tasks; trying again next time']);
      await jest.advanceTimersByTimeAsync(retention.intervalMs);
      expect(kafka.publisher.published.map((r) => r.key)).toEqual(['old', 'cancel/old']);
      retention.stop();
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
