import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import type { PartitionReader, PartitionReadOptions } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import type { RunningService } from '../../src/service';
import { TaskEventStream } from '../../src/tasks/task-event-stream';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { readTaskEvents } from '../support/event-reader';
import { http } from '../support/http';
import { startTestService, testBrokers, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/**
 * A slow SSE reader does not grow memory: the stream writes only as fast as
 * the client takes, and the partition reader reads nothing meanwhile (the
 * records stay in Kafka). A response whose buffer never drains stands for a
 * client that stopped reading; loopback sockets would hide it in megabytes of
 * kernel buffers.
 */
let service: RunningService;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('backpressure'), { role: 'all' });
});
afterAll(() => service.stop());

/** A response whose client takes nothing until released; it keeps what the stream wrote to it, in order. */
class StuckResponse extends Writable {
  headersSent = false;
  readonly taken: string[] = [];
  private held: (() => void)[] = [];
  private released = false;

  constructor(highWaterMark: number) {
    super({
      highWaterMark,
      write: (chunk: Buffer, _encoding, callback) => {
        this.taken.push(chunk.toString());
        if (this.released) callback();
        else this.held.push(() => callback());
      },
    });
    const write = this.write.bind(this);
    this.write = ((chunk: string, ...rest: never[]) => {
      this.written.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof this.write;
  }

  /** what the stream wrote, taken or still buffered */
  readonly written: string[] = [];

  writeHead(): this {
    this.headersSent = true;
    return this;
  }

  release(): void {
    this.released = true;
    for (const go of this.held.splice(0)) go();
  }

  /** every SSE event the stream has written so far, taken by the client or waiting in the buffer */
  eventsWritten(): number {
    return (this.written.join('').match(/^id: /gm) ?? []).length;
  }
}

/** The gateway's reader, telling whether the stream is holding a record (waiting for its client). */
function watchedReader(inner: PartitionReader): PartitionReader & { holding: number } {
  const watched = {
    holding: 0,
    endOffset: (topic: string, partition: number, timeoutMs: number) => inner.endOffset(topic, partition, timeoutMs),
    logEnd: (topic: string, partition: number, timeoutMs: number) => inner.logEnd(topic, partition, timeoutMs),
    startOffset: (topic: string, partition: number, timeoutMs: number) =>
      inner.startOffset(topic, partition, timeoutMs),
    open: (options: PartitionReadOptions, timeoutMs: number) =>
      inner.open(
        {
          ...options,
          async onRecord(record) {
            watched.holding += 1;
            try {
              await options.onRecord(record);
            } finally {
              watched.holding -= 1;
            }
          },
        },
        timeoutMs,
      ),
  };
  return watched;
}

test("a client that stops reading holds one buffer's worth; released, it gets every event in order", async () => {
  const steps = 2000;
  const accepted = await http(service.url, '/tasks', { body: { type: 'countdown', input: { steps, stepMs: 0 } } });
  const task = accepted.body as TaskSnapshot;
  const reader = watchedReader(service.kafka.partitionReader);
  const highWaterMark = 4096;
  const res = new StuckResponse(highWaterMark);
  const stream = new TaskEventStream(
    { reader, timeoutMs: 10000, heartbeatMs: 15000, logger: createLogger('silent') },
    task,
    res as unknown as ServerResponse,
  );
  const opened = await stream.open(BigInt(task.offset), false);
  if (!('served' in opened)) throw new Error('the stream had nothing to serve');

  // Stalled: the buffer is full and the stream holds its current record until the client takes some.
  await until(async () => (res.writableNeedDrain && reader.holding === 1 ? true : undefined));
  const atStall = res.eventsWritten();
  // Every event is in Kafka now; a stream that did not wait would be writing them all into memory.
  const status = async () => (await http(service.url, `/tasks/${task.taskId}`)).body.status;
  await until(async () => ((await status()) === 'succeeded' ? true : undefined));
  expect(reader.holding).toBe(1);
  expect(res.eventsWritten()).toBe(atStall);
  expect(res.writableLength).toBeLessThan(highWaterMark + 1024);
  expect(atStall).toBeLessThan(100);

  res.release();
  await opened.served;
  const all = res.taken.join('');
  const ids = [...all.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
  const where = { topic: task.topic, partition: task.partition, offset: task.offset, key: task.taskId };
  const kafka = await readTaskEvents(testBrokers(), where);
  expect(kafka).toHaveLength(steps + 3);
  expect(ids).toEqual(kafka.map((e) => `${e.partition}:${e.offset}`));
});
