import type { IncomingRecord } from '../../src/kafka/types';
import type { TaskRecord, TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakeLog, request, runner, topics } from './runner-fakes';

/*
 * The runner group's commit waits for its partition's oldest unfinished task, so a runner that takes a partition over
 * (after a fault, a rebalance, a restart) reads the requests after it again. A task finished since is passed over by
 * its final snapshot; one forgotten since (DELETE, or its retention) has none. The api commits its request with the
 * task's snapshot, so the runner, once its view has read everything committed until then, tells a forgotten task
 * (no snapshot) from one its view had not read yet. Taken for new, a deleted task ran again and was back (an audit:
 * four of six deleted tasks answered 200 after a broker restart).
 */

/** a request as the api writes it: with its snapshot, in one transaction */
const apiRequest = (taskId: string, offset: number): IncomingRecord => {
  const r = request(taskId, offset);
  return { ...r, value: JSON.stringify({ ...JSON.parse(String(r.value)), accepted: true }) };
};

const eventsOf = (log: FakeLog, taskId: string) =>
  log.records.filter((r) => r.topic === topics.taskEvents && r.key === taskId).map((r) => JSON.parse(String(r.value)));

const accepted = (taskId: string): TaskRecord => ({
  taskId,
  tenant: 't',
  type: 'countdown',
  status: 'accepted',
  topic: topics.taskEvents,
  partition: 0,
  offset: 0,
  attempt: 0,
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
});

describe('task runner: a request read again after its task was forgotten', () => {
  test('an api request whose task was deleted is passed over: no event, no snapshot, no run', async () => {
    const log = new FakeLog();
    const handle = await runner(log);
    await handle(apiRequest('deleted-1', 4), new AbortController().signal);
    expect(eventsOf(log, 'deleted-1')).toEqual([]);
    expect(log.view.get('deleted-1')).toBeUndefined();
    // It was decided on a synced view, not on the view as it happened to be.
    expect(log.view.syncs).toBeGreaterThan(0);
  });

  test('an api request of a deleted task whose type is gone since (a deploy) is passed over too, not failed anew', async () => {
    const log = new FakeLog();
    const handle = await runner(log);
    const r = apiRequest('deleted-2', 7);
    const gone = { ...r, value: JSON.stringify({ ...JSON.parse(String(r.value)), type: 'retired-type' }) };
    await handle(gone, new AbortController().signal);
    expect(eventsOf(log, 'deleted-2')).toEqual([]);
    expect(log.view.get('deleted-2')).toBeUndefined();
  });

  test('an api request whose snapshot the view reads only in its sync runs, once', async () => {
    const log = new FakeLog();
    // Not in the writer's first sync (before the request is looked at), in the next one.
    log.view.commitElsewhere(() => log.view.commitElsewhere(() => log.view.set('late-1', accepted('late-1'))));
    const handle = await runner(log);
    await handle(apiRequest('late-1', 5), new AbortController().signal);
    expect(eventsOf(log, 'late-1').map((e) => e.event)).toEqual([
      'task.started',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
  });

  test('an api request is not passed over while its view cannot sync: it is tried again, and runs', async () => {
    const log = new FakeLog();
    log.view.commitElsewhere(() => {
      log.view.failSyncs = 2;
      log.view.commitElsewhere(() => log.view.set('slow-1', accepted('slow-1')));
    });
    const handle = await runner(log);
    await handle(apiRequest('slow-1', 6), new AbortController().signal);
    expect(log.view.failSyncs).toBe(0);
    expect(eventsOf(log, 'slow-1').at(-1)?.event).toBe('task.succeeded');
  });
});

describe('task runner: a cancel request left from a task forgotten under the same id', () => {
  // A cancel written after its task's DELETE, by an api instance that had not read the DELETE yet, outlives the
  // tombstones; a task a Kafka client submits under that id later went accepted → cancelled, never run (an audit).
  const cancelAsked = (taskId: string, agoMs: number): TaskRecord => ({
    cancel: true,
    taskId,
    requestedAt: new Date(Date.now() - agoMs).toISOString(),
  });

  test('a task submitted under the id later runs: the cancel was asked of the one before it', async () => {
    const log = new FakeLog();
    log.view.set('cancel/again-1', cancelAsked('again-1', 60000));
    const handle = await runner(log);
    await handle(request('again-1', 3), new AbortController().signal);
    expect(eventsOf(log, 'again-1').map((e) => e.event)).toEqual([
      'task.accepted',
      'task.started',
      'task.progress',
      'task.progress',
      'task.succeeded',
    ]);
  });

  test('also seconds later, when the cancel names the task it was asked of by its creation time', async () => {
    const log = new FakeLog();
    const before = new Date(Date.now() - 3000).toISOString();
    log.view.set('cancel/again-2', { ...cancelAsked('again-2', 1000), taskCreatedAt: before });
    const handle = await runner(log);
    await handle(request('again-2', 4), new AbortController().signal);
    expect(eventsOf(log, 'again-2').at(-1)?.event).toBe('task.succeeded');
  });

  test('a cancel asked of an earlier task that lands while the task made since runs does not stop it', async () => {
    const log = new FakeLog();
    const handle = await runner(log);
    const running = handle(request('again-3', 5, { steps: 3, stepMs: 100 }), new AbortController().signal);
    const status = () => (log.view.get('again-3') as TaskSnapshot | undefined)?.status;
    while (status() !== 'running') await new Promise((r) => setTimeout(r, 5));
    log.view.set('cancel/again-3', { ...cancelAsked('again-3', 0), taskCreatedAt: '2026-01-01T00:00:00.000Z' });
    await running;
    expect(eventsOf(log, 'again-3').at(-1)?.event).toBe('task.succeeded');
  });
});
