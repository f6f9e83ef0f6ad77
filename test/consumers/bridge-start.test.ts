import type { FencingPublisher } from '../../src/kafka/types';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';

/*
 * A callback's attempt is recorded after the callback is answered, and a bridge that dies sends again whatever it had
 * not recorded. Its publisher's first write used to initialize its transactional ids too (about half a second, more
 * on a busy machine): a bridge killed that soon after its start, with a backlog, sent again every callback of its life.
 */
describe('callback bridge start', () => {
  const started: RunningService[] = [];
  let receiver: Receiver | undefined;
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await receiver?.stop();
  });

  test('its publisher is initialized by its start, before its first callback is answered', async () => {
    const prefix = uniquePrefix('bridge-start');
    const api = await startTestService(prefix, { role: 'api' });
    started.push(api);
    // The first answer is held, so the bridge has written nothing of its own when it is looked at.
    receiver = await new Receiver((_, index) => ({ status: 200, delayMs: index === 0 ? 5000 : 0 })).start();
    const sub = await http(api.url, '/subscriptions', {
      body: { callbackUrl: `${receiver.url}/hook`, mode: 'continuous', events: ['order.created'] },
    });
    expect(sub.status).toBe(201);
    const order = await http(api.url, '/orders', { body: { orderNumber: 1, itemCount: 1, status: 'open' } });
    expect(order.status).toBe(201);

    const starting = startTestService(prefix, { role: 'bridge' });
    await receiver.waitFor(1, 60000);
    const bridge = await starting;
    started.push(bridge);
    expect(receiver.received).toHaveLength(1);
    // Both of its transactional ids (taken in turn), initialized by the start, not by a write.
    expect((bridge.kafka.publisher as FencingPublisher).generation).toBe(2);
    expect(bridge.kafka.publisherStats().transactions).toBe(0);
  }, 120000);
});
