import { get, type IncomingMessage } from 'node:http';
import { settlesWithin } from '../../src/lib/settles-within';
import type { PartitionReadOptions } from '../../src/kafka/types';
import { taskEventRecords } from '../../src/tasks/task-events';
import { TENANT_A_KEY } from '../support/api-keys';
import { call, inMemoryApi } from './in-memory-api';

/*
 * An api that closes (SIGTERM) ends its event streams, so the clients reconnect elsewhere with Last-Event-ID. A stream
 * whose partition reader was still opening when the close began (a moment on a busy broker) was not among them: it
 * opened after, was served on, and held the close until the process's stop limit, which then exited 1 and reset its
 * clients' connections (a burst of 60 streams with a SIGTERM among them: 6 held, 15 s, every run).
 */

interface Streamed {
  status: number;
  body: string;
}

/** The stream's status and everything it sent, once it ended. */
function stream(port: number, taskId: string, started: (res: IncomingMessage) => void = () => undefined) {
  return new Promise<Streamed>((resolve, reject) => {
    const headers = { accept: 'text/event-stream', authorization: `Bearer ${TENANT_A_KEY}` };
    get({ host: '127.0.0.1', port, path: `/tasks/${taskId}/events`, headers, agent: false }, (res) => {
      let body = '';
      started(res);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

test('a stream still opening when the server closes is ended once it is open, and the close does not wait for it', async () => {
  const api = await inMemoryApi();
  const submitted = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 2, stepMs: 0 } } });
  const { taskId } = submitted.body as { taskId: string };
  const task = api.tasks.get(taskId);
  if (!task) throw new Error('the task is not in the view');
  // Running, and never ending here: only the close can end its streams.
  await api.kafka.publisher.publish(
    taskEventRecords(api.kafka.topics, 'task.started', { ...task, status: 'running', attempt: 1 }, { attempt: 1 }),
  );
  const port = Number(new URL(await api.app.listen({ port: 0, host: '127.0.0.1' })).port);

  // One stream open before the close: its end says the routes' close hook has run.
  let openedFirst: () => void = () => undefined;
  const firstHead = new Promise<void>((resolve) => (openedFirst = resolve));
  const first = stream(port, taskId, openedFirst);
  await firstHead;

  // The second's reader opens only when the test lets it.
  const open = api.reader.open.bind(api.reader);
  let letOpen: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (letOpen = resolve));
  let askedToOpen: () => void = () => undefined;
  const opening = new Promise<void>((resolve) => (askedToOpen = resolve));
  api.reader.open = async (options: PartitionReadOptions) => {
    askedToOpen();
    await gate;
    return open(options);
  };
  const second = stream(port, taskId);
  await opening;

  const closed = api.app.close();
  expect((await first).status).toBe(200);
  letOpen();
  expect(await settlesWithin(second, 5000)).toBe(true);
  // A stream, as a live one is: an EventSource reconnects after a stream that ends, not after a 503.
  const late = await second;
  expect(late.status).toBe(200);
  expect(late.body).toContain(`: events of task ${taskId}`);
  expect(await settlesWithin(closed, 5000)).toBe(true);
  expect(api.reader.openReadings).toBe(0);
});
