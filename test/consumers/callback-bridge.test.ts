import type { RunningService } from '../../src/service';
import { startChildService, type ChildService } from '../support/child-service';
import { http } from '../support/http';
import { Receiver } from '../support/receiver';
import { startTestService, uniquePrefix } from '../support/test-service';

/** The bridge as its own process, killed with callbacks in flight. */
describe('callback bridge process', () => {
  let api: RunningService;
  let receiver: Receiver;
  const bridges: ChildService[] = [];

  afterAll(async () => {
    await Promise.all(bridges.map((b) => b.kill('SIGTERM')));
    await receiver?.stop();
    await api?.stop();
  });

  test('SIGKILL with a few hundred events in flight: after a restart every event reached the receiver at least once, duplicates with the same webhook-id', async () => {
    const prefix = uniquePrefix('bridge-crash');
    api = await startTestService(prefix, { role: 'api' });
    receiver = await new Receiver(() => ({ status: 200, delayMs: 5 })).start();
    const sub = await http(api.url, '/subscriptions', {
      body: { callbackUrl: `${receiver.url}/hook`, mode: 'continuous', events: ['order.created'] },
    });
    expect(sub.status).toBe(201);
    bridges.push(await startChildService('bridge', prefix));

    const created: string[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const res = await http(api.url, '/orders', {
        body: {
          order: Array.from({ length: 100 }, (_, i) => ({
            orderNumber: batch * 100 + i,
            itemCount: 1,
            status: 'open',
          })),
        },
      });
      expect(res.status).toBe(201);
      created.push(...res.body._embedded.orders.map((o: { _links: { self: { href: string } } }) => o._links.self.href));
    }
    await receiver.waitFor(30, 30000);
    expect(receiver.received.length).toBeLessThan(300);
    expect(await bridges[0].kill('SIGKILL')).toBeNull();
    const beforeRestart = receiver.received.length;
    bridges.push(await startChildService('bridge', prefix));

    const deadline = Date.now() + 90000;
    // Callback links are relative to the API root unless PUBLIC_URL is set: the path names the resource either way.
    const path = (href: string) => new URL(href, 'http://api.invalid').pathname;
    const seen = () => new Set(receiver.received.map((r) => path(r.json._links.resource.href)));
    while (seen().size < created.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(seen()).toEqual(new Set(created));

    const idsByResource = new Map<string, Set<string>>();
    for (const r of receiver.received) {
      const ids = idsByResource.get(path(r.json._links.resource.href)) ?? new Set();
      ids.add(String(r.headers['webhook-id']));
      idsByResource.set(path(r.json._links.resource.href), ids);
    }
    for (const ids of idsByResource.values()) expect(ids.size).toBe(1);
    expect(beforeRestart).toBeGreaterThan(0);
  }, 180000);
});
