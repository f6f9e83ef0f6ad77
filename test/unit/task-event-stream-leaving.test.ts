import type { ServerResponse } from 'node:http';
import type { PartitionReader, PartitionReading } from '../../src/kafka/types';
import { KafkaUnavailableError } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { TaskEventStream } from '../../src/tasks/task-event-stream';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakeResponse } from './fake-response';

/*
 * A client that closes the connection while its event stream is still opening (the partition reader takes a moment
 * on a busy broker). Nothing is left to answer: open() says so, writes no head, and leaves no reader running; it
 * used to write the head on the closed response, or fail as `kafka-unavailable`, and Fastify logged an error.
 */
const task = { taskId: 't1', topic: 'events', partition: 0, offset: 0, status: 'running' } as TaskSnapshot;

/** A reader whose open() waits for the test to settle it; it counts the readings stopped. */
function slowReader() {
  let settle: (outcome: 'open' | 'fail') => void = () => undefined;
  const stopped = { count: 0 };
  const reading: PartitionReading = {
    reached: () => new Promise(() => undefined),
    stop: async () => {
      stopped.count += 1;
    },
  };
  const reader: PartitionReader = {
    open: () =>
      new Promise((resolve, reject) => {
        settle = (outcome) =>
          outcome === 'open' ? resolve(reading) : reject(new KafkaUnavailableError('reader stopped'));
      }),
    endOffset: async () => '10',
    logEnd: async () => '10',
    startOffset: async () => '0',
  };
  return { reader, stopped, settle: (outcome: 'open' | 'fail') => settle(outcome) };
}

const deps = (reader: PartitionReader) => ({
  reader,
  timeoutMs: 5000,
  heartbeatMs: 60000,
  logger: createLogger('silent'),
});

test.each(['open', 'fail'] as const)(
  'a client that leaves while the reader opens (then the reader does: %s) gets no head, and no reader is left',
  async (outcome) => {
    const { reader, stopped, settle } = slowReader();
    const res = new FakeResponse();
    const stream = new TaskEventStream(deps(reader), task, res as unknown as ServerResponse);
    const opening = stream.open(0n, false);
    res.emit('close');
    settle(outcome);
    await expect(opening).resolves.toEqual({ gone: true });
    expect(res.heads).toBe(0);
    expect(stopped.count).toBe(outcome === 'open' ? 1 : 0);
  },
);

test('a client that stays gets its stream; a reader that fails while it stays is still an error', async () => {
  const staying = slowReader();
  const res = new FakeResponse();
  const stream = new TaskEventStream(deps(staying.reader), task, res as unknown as ServerResponse);
  const opening = stream.open(0n, false);
  staying.settle('open');
  expect(await opening).toHaveProperty('served');
  expect(res.heads).toBe(1);
  stream.end();
  const failing = slowReader();
  const failed = new TaskEventStream(deps(failing.reader), task, new FakeResponse() as unknown as ServerResponse);
  const attempt = failed.open(0n, false);
  failing.settle('fail');
  await expect(attempt).rejects.toBeInstanceOf(KafkaUnavailableError);
});
