import { RunInterrupted, TaskJournal } from '../../consumers/task-runner/task-execution';
import { createLogger } from '../../src/logger';
import type { TaskRecord, TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakePublisher, FakeView } from './fakes';

const topics = { taskEvents: 'events', tasks: 'tasks' };

function journal() {
  const publisher = new FakePublisher();
  const view = new FakeView<TaskRecord>();
  const snapshot = { taskId: 't1', tenant: 't', type: 'countdown', status: 'running', attempt: 1 } as TaskSnapshot;
  const deps = { publisher, view, topics, resources: { list: () => [] }, logger: createLogger('silent') };
  return { publisher, journal: new TaskJournal(snapshot, { ...deps, kafkaTimeoutMs: 1000 }) };
}

const events = (p: FakePublisher) => p.on('events').map((r) => JSON.parse(String(r.value)).event as string);

describe('TaskJournal', () => {
  test('a failed enqueued write interrupts the run (RunInterrupted) and fails the flush', async () => {
    const { publisher, journal: j } = journal();
    publisher.failNext = 1;
    j.enqueue('task.started', { status: 'running' }, {});
    expect(await j.flush()).toBe(false);
    expect(j.interrupted.aborted).toBe(true);
    expect(j.interrupted.reason).toBeInstanceOf(RunInterrupted);
  });

  test('nothing the handler still sends after the final event is written', async () => {
    const { publisher, journal: j } = journal();
    j.enqueue('task.progress', {}, { current: 1, total: 2 });
    const final = j.write('task.cancelled', { status: 'cancelled' }, {});
    j.enqueue('task.progress', {}, { current: 2, total: 2 });
    j.enqueue('task.output', {}, { late: true });
    await final.catch(() => undefined);
    expect(await j.flush()).toBe(true);
    expect(events(publisher)).toEqual(['task.progress', 'task.cancelled']);
  });
});
