import type { ServerResponse } from 'node:http';
import type { PartitionReader, PartitionReadOptions, PartitionReading } from '../../src/kafka/types';
import { RecordsDeletedError } from '../../src/kafka/types';
import { createLogger } from '../../src/logger';
import { TaskEventStream } from '../../src/tasks/task-event-stream';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakeResponse } from './fake-response';

/*
 * Kafka refuses a stream's reading while it opens: records deleted under it (the events topic's retention, a records
 * deletion) between the cursor's check and the reading's first fetch. Opening fails with that reason, so the route
 * answers 410 `task-events-deleted` with where to resume; it used to end the response before any head, an empty 200
 * without `text/event-stream` after which an EventSource gives up without reconnecting (an audit: 10 of 13 tries).
 */
const base = { taskId: 't1', topic: 'events', partition: 0, offset: 0 } as const;

/**
 * A reader whose stream reading Kafka refuses: while it opens (`during`), or just after. The one-record check of a
 * cursor (resumesAfterFinal, which takes no onError) reads nothing. The readings it stopped are counted.
 */
function refusingReader(when: 'during' | 'after') {
  const stopped = { count: 0 };
  const reader: PartitionReader = {
    open: async (options: PartitionReadOptions) => {
      let stop: () => void = () => undefined;
      const stopping = new Promise<never>((_, reject) => (stop = () => reject(new Error('reader stopped'))));
      stopping.catch(() => undefined);
      const reading: PartitionReading = {
        reached: () => (options.onError ? stopping : Promise.resolve()),
        stop: async () => {
          stopped.count += 1;
          stop();
        },
      };
      const refuse = () => options.onError?.(new RecordsDeletedError(options.topic, options.partition, 5n));
      if (when === 'during') refuse();
      else setImmediate(refuse);
      return reading;
    },
    endOffset: async () => '10',
    logEnd: async () => '10',
    startOffset: async () => '0',
  };
  return { reader, stopped };
}

// A running task's stream writes its head once its reader is open; an ended task's, once it has found an event.
test.each([
  ['running', 'during'],
  ['succeeded', 'during'],
  ['succeeded', 'after'],
] as const)(
  'a reading refused while a stream opens (the task %s, refused %s its open) fails the opening with why, no head',
  async (status, when) => {
    const { reader, stopped } = refusingReader(when);
    const res = new FakeResponse();
    const deps = { reader, timeoutMs: 5000, heartbeatMs: 60000, logger: createLogger('silent') };
    const stream = new TaskEventStream(deps, { ...base, status } as TaskSnapshot, res as unknown as ServerResponse);
    const opening = stream.open(3n, status === 'succeeded');
    await expect(opening).rejects.toBeInstanceOf(RecordsDeletedError);
    expect(res.heads).toBe(0);
    expect(res.writableEnded).toBe(false);
    expect(stopped.count).toBeGreaterThanOrEqual(1);
  },
);
