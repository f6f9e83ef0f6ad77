import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { openSse } from '../support/sse-client';
import { startTestService, uniquePrefix } from '../support/test-service';

/**
 * Short HTTP timeouts make the idle limit (HTTP_REQUEST_TIMEOUT_MS + KAFKA_TIMEOUT_MS + 5 s = 9 s here) shorter than
 * the default heartbeat (15 s): a stream that waits longer than the limit for its next event must still get it.
 */
let service: RunningService;

beforeAll(async () => {
  const env = { HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '500', KAFKA_TIMEOUT_MS: '3000' };
  service = await startTestService(uniquePrefix('stream-idle'), { role: 'all', env });
});
afterAll(async () => {
  await service?.stop();
});

test('a stream waiting longer than the idle limit for its next event is kept open by heartbeats and gets it', async () => {
  const res = await http(service.url, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 11000 } } });
  expect(res.status).toBe(202);
  const sse = await openSse(service.url, `/tasks/${res.body.taskId as string}/events`);
  expect(sse.status).toBe(200);
  await sse.ended;
  expect(sse.comments.filter((c) => c === 'heartbeat').length).toBeGreaterThanOrEqual(2);
  expect(sse.events.at(-1)?.event).toBe('task.succeeded');
}, 60000);
