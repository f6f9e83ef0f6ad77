import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * An operator's view of a dead endpoint: once the bridge leaves a subscription's events to a backlog (read again
 * from Kafka when the endpoint answers), the consumer lag no longer shows them, and
 * hookstream_callback_backlog_offsets does, on the real broker, until the endpoint is back and has them all.
 */
let service: RunningService;
let receiver: Receiver;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('backlog-metric'), {
    role: 'all',
    // Retried for the whole test, never dead-lettered: the head stays the first order.
    env: { CALLBACK_MAX_ATTEMPTS: '100', CALLBACK_BACKOFF_BASE_MS: '20', CALLBACK_BACKOFF_MAX_MS: '100' },
  });
  receiver = await new Receiver(() => ({ status: 503 })).start();
});
afterAll(async () => {
  await receiver.stop();
  await service.stop();
});

/** hookstream_callback_backlog_offsets of one subscription, summed over its partitions */
async function backlogOf(subscription: string): Promise<{ series: number; offsets: number }> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const lines = text
    .split('\n')
    .filter((l) => l.startsWith(`hookstream_callback_backlog_offsets{subscription="${subscription}"`));
  return { series: lines.length, offsets: lines.reduce((sum, l) => sum + Number(l.split(' ').pop()), 0) };
}

test("a dead endpoint's events left to its backlog are counted per subscription, and are gone once delivered", async () => {
  const sub = await http(service.url, '/subscriptions', {
    body: { callbackUrl: `${receiver.url}/dead`, mode: 'continuous', events: ['order.created'] },
  });
  expect(sub.status).toBe(201);
  const id = sub.body.UUID as string;
  expect(await backlogOf(id)).toEqual({ series: 0, offsets: 0 });

  const order = Array.from({ length: 20 }, (_, n) => ({ orderNumber: n, itemCount: 1, status: 'open' }));
  expect((await http(service.url, '/orders', { body: { order } })).status).toBe(201);
  // The head fails: the events queued behind it go to its backlog (and the head too, once it counts as stuck).
  const dead = await until(async () => {
    const b = await backlogOf(id);
    return b.offsets >= 19 ? b : undefined;
  }, 30000);
  expect(dead.series).toBeGreaterThanOrEqual(1);
  expect(receiver.received.length).toBeGreaterThanOrEqual(1);

  const revivedAt = receiver.received.length;
  receiver.answer(() => ({ status: 204 }));
  const delivered = () => new Set(receiver.received.slice(revivedAt).map((r) => r.json.data.orderNumber));
  await until(async () => (delivered().size === 20 ? true : undefined), 30000);
  await until(async () => ((await backlogOf(id)).offsets === 0 ? true : undefined), 30000);
}, 90000);
