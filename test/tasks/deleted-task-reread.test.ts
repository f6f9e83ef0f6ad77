import { Kafka, logLevel } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { committedRecords } from '../support/topic-contents';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * The runner group's commit of a requests partition waits for its oldest unfinished task: the requests after a
 * long-running one are read again by the runner that takes the partition over (a restart here; a fault or a
 * rebalance alike). Tasks finished since are passed over by their final snapshot. A task deleted since has none:
 * it was taken for a new one, ran again, and answered 200 again (an audit: four of six deleted tasks after a broker
 * restart). It stays deleted.
 */
describe('a deleted task whose request the runner reads again', () => {
  const prefix = uniquePrefix('deleted-reread');
  let first: RunningService | undefined;
  let second: RunningService | undefined;

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
  }, 60000);

  test('stays deleted: 404, one task.accepted, no run again', async () => {
    first = await startTestService(prefix, { role: 'all' });
    const submit = async (input: Record<string, unknown>) => {
      const res = await http(first?.url as string, '/tasks', { body: { type: 'countdown', input } });
      expect(res.status).toBe(202);
      return res.body as { taskId: string; partition: number };
    };
    const status = async (url: string, taskId: string) => (await http(url, `/tasks/${taskId}`)).body?.status;
    // It holds its partition's commit for as long as it runs.
    const long = await submit({ steps: 600, stepMs: 100 });
    await until(async () => ((await status(first?.url as string, long.taskId)) === 'running' ? true : undefined));
    // Tasks whose requests follow it in its partition (a task id's partition is its key's, as for its events).
    const deleted: string[] = [];
    for (let i = 0; i < 60 && deleted.length < 3; i += 1) {
      const short = await submit({ steps: 1, stepMs: 0 });
      if (short.partition === long.partition) deleted.push(short.taskId);
    }
    expect(deleted).toHaveLength(3);
    for (const taskId of deleted) {
      await until(async () => ((await status(first?.url as string, taskId)) === 'succeeded' ? true : undefined));
      expect((await http(first.url as string, `/tasks/${taskId}`, { method: 'DELETE' })).status).toBe(204);
    }
    const admin = new Kafka({ brokers: testBrokers(), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const requests = first.kafka.topics.taskRequests;
      const end = (await admin.fetchTopicOffsets(requests)).find((p) => p.partition === long.partition)?.high;
      await first.stop();
      first = undefined;

      second = await startTestService(prefix, { role: 'all' });
      const url = second.url as string;
      // The new runner reads the partition from the commit: the long task runs again, so the requests after it were
      // read again too.
      await until(async () => ((await http(url, `/tasks/${long.taskId}`)).body?.attempt >= 2 ? true : undefined));
      expect(
        (await http(url, `/tasks/${long.taskId}`, { method: 'PATCH', body: { status: 'cancelled' } })).status,
      ).toBe(202);
      // Once the commit is past every request written before the restart, each was handled by the new runner. The
      // partition ends with the commit marker of the api's last transaction: a consumer's position stops before it.
      const committed = async () => {
        const [topic] = await admin.fetchOffsets({ groupId: `${prefix}task-runner`, topics: [requests] });
        const at = topic.partitions.find((p) => p.partition === long.partition)?.offset;
        return at !== undefined && Number(at) >= Number(end) - 1 ? true : undefined;
      };
      await until(committed, 60000, 200, 'the runner group committed past the requests written before the restart');
      for (const taskId of deleted) expect((await http(url, `/tasks/${taskId}`)).status).toBe(404);
      const events = await committedRecords(testBrokers(), second.kafka.topics.taskEvents);
      for (const taskId of deleted) {
        const kinds = events.filter((r) => r.key === taskId).map((r) => JSON.parse(String(r.value)).event);
        expect(kinds).toEqual(['task.accepted', 'task.started', 'task.progress', 'task.succeeded']);
      }
    } finally {
      await admin.disconnect();
    }
  }, 180000);
});
