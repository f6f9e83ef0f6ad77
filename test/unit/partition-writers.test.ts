import { PartitionWriters } from '../../consumers/task-runner/partition-writers';
import { KafkaUnavailableError, type FencingPublisher, type StateView } from '../../src/kafka/types';
import type { TaskRecord } from '../../src/tasks/task-snapshot';

/*
 * A runner checks its partition's writer before it decides from its view whether a task still needs a run
 * (consumers/task-runner/partition-writers.ts). After a failed write, a resolve settles the publisher's transactions
 * and syncs the view; until it has, the view may not show a final event that the failed write committed after all.
 * Every step here is a promise the test releases, so the orders that a slow broker makes are played one by one.
 */

/** resolves when the test says so */
function gate<T>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

function setup() {
  const order: string[] = [];
  const settles: ReturnType<typeof gate<number>>[] = [];
  let created = 0;
  let settledCalls = 0;
  const publisher = {
    generation: 1,
    // The first settle (the writer's first check) answers at once; later ones wait for the test.
    settled: () => {
      settledCalls += 1;
      if (settledCalls === 1) return Promise.resolve(1);
      const g = gate<number>();
      settles.push(g);
      return g.promise;
    },
    publish: async () => [],
    publishStaged: async () => [],
    close: async () => undefined,
  } as unknown as FencingPublisher;
  const view = {
    syncedSince: async () => {
      order.push('synced');
    },
  } as unknown as StateView<TaskRecord>;
  const create = () => {
    created += 1;
    return publisher;
  };
  const writers = new PartitionWriters(create, 'runner-', view, 1000);
  return { writers, order, settles, created: () => created };
}

describe('partition writers: no task is decided from a view that a resolve under way may still change', () => {
  test("a check during another task's resolve answers only once that resolve has synced the view", async () => {
    const { writers, order, settles } = setup();
    await writers.checked(0);
    expect(order).toEqual(['synced']);
    // A write failed (its transaction may yet commit); one task's retry resolves, another task's check comes.
    writers.markUnsure(0);
    const resolving = writers.resolved(0);
    const checking = writers.checked(0).then((w) => {
      order.push('checked');
      return w;
    });
    settles[settles.length - 1].open(1);
    await Promise.all([resolving, checking]);
    expect(order).toEqual(['synced', 'synced', 'checked']);
  });

  test('a write that fails during the resolve is resolved again before the waiting check answers', async () => {
    const { writers, order, settles } = setup();
    await writers.checked(0);
    writers.markUnsure(0);
    const resolving = writers.resolved(0);
    const checking = writers.checked(0).then(() => order.push('checked'));
    // Marked after the resolve cleared the mark: the resolve may have settled before that write's transaction.
    writers.markUnsure(0);
    settles[settles.length - 1].open(1);
    await resolving;
    // The check resolves again itself: its settle is the next one.
    await new Promise((r) => setImmediate(r));
    settles[settles.length - 1].open(1);
    await checking;
    expect(order).toEqual(['synced', 'synced', 'synced', 'checked']);
  });

  test('a check that waited while the partition was handed back fails, and makes no writer to fence the new owner', async () => {
    const { writers, settles, created } = setup();
    await writers.checked(0);
    writers.markUnsure(0);
    const resolving = writers.resolved(0);
    const checking = writers.checked(0);
    await writers.release(0);
    settles[settles.length - 1].open(1);
    await resolving;
    await expect(checking).rejects.toBeInstanceOf(KafkaUnavailableError);
    expect(created()).toBe(1);
  });
});
