import type { Producer, Transaction } from 'kafkajs';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { holdTransactionOpen } from '../support/open-transaction';
import { openSse } from '../support/sse-client';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * A transaction left open on the events topic (another producer's, or one a writer killed mid-transaction left until
 * its timeout) holds the last stable offset of its partitions below every record written after it: a committed
 * reader cannot read them yet, though they are committed. A task that ran meanwhile has ended, and its events are
 * there, unreadable for now. Its page used to say `complete` with none of them, and its stream answered 204, which
 * tells an EventSource to stop for good: the client never got the task's final event.
 */
describe('the events of an ended task that an open transaction hides for a while', () => {
  const prefix = uniquePrefix('events-held');
  let service: RunningService;
  const zombies: Producer[] = [];

  /** A transaction over every partition of `topic`, left open as a writer that died leaves it. */
  async function holdOpen(topic: string): Promise<Transaction> {
    const open = await holdTransactionOpen(topic, `${prefix}zombie`);
    zombies.push(open.producer);
    return open.transaction;
  }

  beforeAll(async () => {
    service = await startTestService(prefix, { role: 'all', env: { KAFKA_TIMEOUT_MS: '2000' } });
  }, 180000);

  afterAll(async () => {
    await Promise.all(zombies.map((z) => z.disconnect().catch(() => undefined)));
    await service?.stop();
  }, 60000);

  test('its page is not complete and its stream waits; once the transaction ends, every event comes, the final last', async () => {
    const url = service.url as string;
    const txn = await holdOpen(service.kafka.topics.taskEvents);
    const submitted = await http(url, '/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 0 } } });
    expect(submitted.status).toBe(202);
    const { taskId } = submitted.body as { taskId: string };
    const ended = async () => ((await http(url, `/tasks/${taskId}`)).body?.status === 'succeeded' ? true : undefined);
    await until(ended, 30000, 50, 'the task succeeded');

    const page = await http(url, `/tasks/${taskId}/events`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ complete: false });
    // HEAD of the stream says what GET would do: a stream (200), not "nothing follows" (204).
    const head = await http(url, `/tasks/${taskId}/events`, {
      method: 'HEAD',
      headers: { accept: 'text/event-stream' },
    });
    expect(head.status).toBe(200);
    // The stream is answered (after KAFKA_TIMEOUT_MS of finding nothing readable), and waits with the client.
    const sse = await openSse(url, `/tasks/${taskId}/events`);
    expect(sse.status).toBe(200);

    await txn.abort();
    await sse.ended;
    const kinds = sse.events.map((e) => e.event);
    expect(kinds).toEqual(['task.accepted', 'task.started', 'task.progress', 'task.progress', 'task.succeeded']);
    const after = await http(url, `/tasks/${taskId}/events`);
    expect(after.body).toMatchObject({ complete: true, count: 5 });
    // A transaction open for a moment (as every writer's is, milliseconds each) is waited for, not taken for a gap.
    const brief = await holdTransactionOpen(service.kafka.topics.taskEvents, `${prefix}brief`);
    const paging = http(url, `/tasks/${taskId}/events`);
    setTimeout(() => void brief.transaction.abort().finally(() => brief.producer.disconnect()), 300);
    expect((await paging).body).toMatchObject({ complete: true, count: 5 });
    // And nothing follows the final event: 204, as an EventSource needs to stop.
    const last = sse.events.at(-1)?.id as string;
    const again = await openSse(url, `/tasks/${taskId}/events`, { 'last-event-id': last });
    expect(again.status).toBe(204);
  }, 90000);

  /*
   * Nothing of a task follows its final event, whatever the partition holds after it: a transaction left open there
   * (as here), or millions of other tasks' records that a reading to the log's end takes longer than KAFKA_TIMEOUT_MS
   * to pass. Either way, a client that resumes after the final event used to be told more might come (a stream, 200,
   * and `complete: false`), and an EventSource reconnected for ever.
   */
  test('a resume after the final event is told nothing follows, though the partition is held after it', async () => {
    const url = service.url as string;
    const submitted = await http(url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(submitted.status).toBe(202);
    const { taskId } = submitted.body as { taskId: string };
    const ended = async () => ((await http(url, `/tasks/${taskId}`)).body?.status === 'succeeded' ? true : undefined);
    await until(ended, 30000, 50, 'the task succeeded');
    const page = await http(url, `/tasks/${taskId}/events`);
    expect(page.body).toMatchObject({ complete: true, count: 4 });
    const finalId = page.body.events.at(-1).id as string;

    await holdOpen(service.kafka.topics.taskEvents);
    const after = await http(url, `/tasks/${taskId}/events?after=${finalId}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ complete: true, count: 0 });
    const head = await http(url, `/tasks/${taskId}/events`, {
      method: 'HEAD',
      headers: { accept: 'text/event-stream', 'last-event-id': finalId },
    });
    expect(head.status).toBe(204);
    const stream = await openSse(url, `/tasks/${taskId}/events`, { 'last-event-id': finalId });
    expect(stream.status).toBe(204);
    // A cursor before the final event still reads on to it: the page has it, and says complete.
    const before = await http(url, `/tasks/${taskId}/events?after=${page.body.events.at(-2).id}`);
    expect(before.body).toMatchObject({ complete: true, count: 1 });
  }, 90000);
});
