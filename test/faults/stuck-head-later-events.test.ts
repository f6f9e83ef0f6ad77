import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';

/*
 * A head that fails HEAD_STUCK_AFTER times in a row is taken over by its partition's backlog, so its event no longer
 * holds the partition's commit. The subscription's events that come only after that (a slow task's progress, a
 * sparse event kind) must still be delivered, in order, once the head is: the chaos audit saw them passed by for
 * good, the backlog never reading them, until a rebalance.
 */
let service: RunningService;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('stuck-head'), {
    role: 'all',
    env: { CALLBACK_BACKOFF_BASE_MS: '100', CALLBACK_BACKOFF_MAX_MS: '400', CALLBACK_MAX_ATTEMPTS: '10' },
  });
  let startedFailures = 0;
  // task.started fails three times (the head is stuck then), then every callback is taken.
  receiver = await new Receiver((r) => {
    if (r.json.event === 'task.started' && startedFailures < 3) {
      startedFailures += 1;
      return { status: 500 };
    }
    return { status: 200 };
  }).start();
});
afterAll(async () => {
  await receiver?.stop();
  await service?.stop();
});

test("a task's events after its stuck head are all delivered, in order, once the head is", async () => {
  // Its progress comes 1.5 s apart: the first long after task.started's third failure (about 0.3 s in).
  const input = { steps: 3, stepMs: 1500 };
  const res = await http(service.url, '/tasks', {
    body: { type: 'countdown', input, callbackUrl: `${receiver.url}/hook`, mode: 'continuous' },
  });
  expect(res.status).toBe(202);
  // task.started is sent four times: three failures, then its delivery; nothing after it goes before it.
  const got = await receiver.waitFor(9, 30000);
  expect(got.map((r) => r.json.event)).toEqual([
    'task.accepted',
    ...Array<string>(4).fill('task.started'),
    'task.progress',
    'task.progress',
    'task.progress',
    'task.succeeded',
  ]);
});
