import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { createLogger } from '../../src/logger';
import { TaskEventStream } from '../../src/tasks/task-event-stream';
import type { TaskSnapshot } from '../../src/tasks/task-snapshot';
import { FakePartitionReader, FakePublisher } from './fakes';

/*
 * An api instance whose view of the tasks topic trails the runner still shows running a task that has ended. A
 * client that read the task's stream to its final event on one instance and resumes on this one (an EventSource
 * reconnects with the final event's id as Last-Event-ID) opens a stream after the final event: no event of the task
 * is left to end it. It used to wait for ever, heartbeats only; it ends once the view shows the task ended.
 */

const TOPIC = 'events';
const task = { taskId: 't1', topic: TOPIC, partition: 0, offset: 0, status: 'running' } as TaskSnapshot;

class FakeResponse extends EventEmitter {
  readonly chunks: string[] = [];
  writableEnded = false;
  destroyed = false;
  writableNeedDrain = false;
  writeHead(): this {
    return this;
  }
  write(chunk: string): boolean {
    this.chunks.push(chunk);
    return true;
  }
  end(): this {
    this.writableEnded = true;
    return this;
  }
}

/** the task's three events, the last final, and one record of another task after them */
async function eventsLog() {
  const publisher = new FakePublisher();
  const event = (key: string, kind: string) => ({
    topic: TOPIC,
    partition: 0,
    key,
    value: JSON.stringify({ event: kind }),
    headers: { ce_type: kind },
  });
  await publisher.publish([event('t1', 'task.accepted'), event('t1', 'task.started'), event('t1', 'task.succeeded')]);
  await publisher.publish([event('t2', 'task.accepted')]);
  return new FakePartitionReader(publisher);
}

function stream(reader: FakePartitionReader, untilEnded: (taskId: string, signal: AbortSignal) => Promise<unknown>) {
  const res = new FakeResponse();
  const deps = { reader, timeoutMs: 5000, heartbeatMs: 60000, logger: createLogger('silent'), untilEnded };
  return { res, stream: new TaskEventStream(deps, task, res as unknown as ServerResponse) };
}

describe("a task's event stream opened while this instance's view still shows the task running", () => {
  test('resumed after the final event, it ends once the view shows the task ended', async () => {
    const reader = await eventsLog();
    let viewCaughtUp: () => void = () => undefined;
    const ended = new Promise<void>((resolve) => (viewCaughtUp = resolve));
    const asked: string[] = [];
    const { res, stream: s } = stream(reader, (taskId) => {
      asked.push(taskId);
      return ended;
    });
    // The cursor is the final event's id (0:2): the stream starts after it.
    const opened = await s.open(3n, false);
    if (!('served' in opened)) throw new Error(`expected a stream, got ${JSON.stringify(opened)}`);
    let served = false;
    void opened.served.then(() => (served = true));
    await new Promise((r) => setImmediate(r));
    expect(asked).toEqual(['t1']);
    // Until the view shows the end, the stream waits: another event of the task may yet come.
    expect(served).toBe(false);
    viewCaughtUp();
    await opened.served;
    expect(res.writableEnded).toBe(true);
    // Nothing was sent but the head's comment: the other task's record is not this task's event.
    expect(res.chunks.join('')).not.toContain('event:');
  });

  test('from the start, the stream sends every event and ends after the final one, whatever the view says', async () => {
    const reader = await eventsLog();
    const { res, stream: s } = stream(reader, () => new Promise(() => undefined));
    const opened = await s.open(0n, false);
    if (!('served' in opened)) throw new Error(`expected a stream, got ${JSON.stringify(opened)}`);
    await opened.served;
    const kinds = res.chunks.join('').match(/^event: .*$/gm);
    expect(kinds).toEqual(['event: task.accepted', 'event: task.started', 'event: task.succeeded']);
  });
});
