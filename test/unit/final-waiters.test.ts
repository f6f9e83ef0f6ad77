import { FinalWaiters } from '../../src/tasks/final-waiters';
import type { TaskRecord, TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakeView } from './fakes';

const snapshot = (status: TaskSnapshot['status']): TaskSnapshot => ({
  taskId: 'task-1',
  tenant: 't',
  type: 'countdown',
  status,
  topic: 'events',
  partition: 0,
  offset: 0,
  attempt: 1,
  createdAt: '2026-11-24T10:00:00Z',
  updatedAt: '2026-11-24T10:00:00Z',
});

/* `Prefer: wait` waiters: woken by the view's change that ends the task; a waiter that is done costs nothing. */
describe('FinalWaiters', () => {
  test("a final snapshot wakes the task's waiters; a progress update does not", async () => {
    const view = new FakeView<TaskRecord>();
    const waiters = new FinalWaiters(view);
    let woken = false;
    const waiting = waiters.wait('task-1', 60000).then(() => {
      woken = true;
    });
    view.set('task-1', snapshot('running'));
    await Promise.resolve();
    expect(woken).toBe(false);
    expect(waiters.size).toBe(1);
    view.set('task-1', snapshot('succeeded'));
    await waiting;
    expect(waiters.size).toBe(0);
  });

  test('a tombstone (the task forgotten) wakes them too; an abort or the timeout ends one wait', async () => {
    const view = new FakeView<TaskRecord>();
    const waiters = new FinalWaiters(view);
    const forgotten = waiters.wait('task-1', 60000);
    view.set('task-1', undefined);
    await forgotten;
    const left = new AbortController();
    const leaving = waiters.wait('task-2', 60000, left.signal);
    const timing = waiters.wait('task-3', 1);
    expect(waiters.size).toBe(2);
    left.abort();
    await Promise.all([leaving, timing]);
    expect(waiters.size).toBe(0);
  });
});
