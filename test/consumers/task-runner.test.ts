import { untilGroupStable } from '../support/consumer-group';
import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { readTaskEvents } from '../support/event-reader';
import { http } from '../support/http';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';
import { Kafka, logLevel } from 'kafkajs';
import { committedRecords } from '../support/topic-contents';
import { partitionOfKey } from '../../src/kafka/murmur2';

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

  test('one task id produced to every partition (a key partitioned otherwise, a retry) runs once across two runners', async () => {
    const prefix = uniquePrefix('dupes');
    api = await startTestService(prefix, { role: 'api' });
    children.push(await startChildService('runner', prefix), await startChildService('runner', prefix));
    // Three partitions on two members: each runner has one of the copies at least.
    await untilGroupStable(`${prefix}task-runner`, 2);
    const taskId = `dupe-${Date.now()}`;
    const value = JSON.stringify({ type: 'countdown', input: { steps: 4, stepMs: 100 }, tenant: 'tenant-a' });
    const producer = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    const topic = api.kafka.topics.taskRequests;
    // The copies off the key's partition first, so the runners that have them reach them before the key's own.
    const home = partitionOfKey(taskId, 3);
    const order = [0, 1, 2].filter((p) => p !== home).concat(home);
    await producer.send({ topic, messages: order.map((partition) => ({ key: taskId, value, partition })) });
    await producer.disconnect();

    expect(await finished(taskId)).toMatchObject({ status: 'succeeded', attempt: 1 });
    // Every copy handled, the moved ones too: the group's committed offset is past each of them.
    await until(async () => {
      const copies = (await committedRecords(testBrokers(), topic)).filter((r) => r.key === taskId);
      const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        const [done] = await admin.fetchOffsets({ groupId: `${prefix}task-runner`, topics: [topic] });
        const committed = new Map(done.partitions.map((p) => [p.partition, BigInt(p.offset)]));
        const handled = copies.every((c) => (committed.get(c.partition) ?? -1n) > BigInt(c.offset));
        return copies.length >= 3 && handled ? true : undefined;
      } finally {
        await admin.disconnect();
      }
    }, 60000);
    const events = (await committedRecords(testBrokers(), api.kafka.topics.taskEvents))
      .filter((r) => r.key === taskId)
      .map((r) => (JSON.parse(String(r.value)) as { event: string }).event);
    expect(events.filter((e) => e === 'task.started')).toHaveLength(1);
    expect(events.filter((e) => ['task.succeeded', 'task.failed', 'task.cancelled'].includes(e))).toEqual([
      'task.succeeded',
    ]);
  }, 150000);
});
