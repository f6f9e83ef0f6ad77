import { http } from '../support/http';
import { startTestService, uniquePrefix } from '../support/test-service';

/** Resources live in Kafka: they survive a restart and every api process converges on them. */
describe('resources stored in Kafka', () => {
  const prefix = uniquePrefix('state');

  test('after an api restart every resource is still there', async () => {
    const first = await startTestService(prefix, { role: 'api' });
    const created = await http(first.url as string, '/orders', {
      body: { orderNumber: 1, itemCount: 3, status: 'open', author: 'u-grace' },
    });
    const href = created.headers.get('location') as string;
    await http(first.url as string, href, { method: 'PATCH', body: { status: 'paid' } });
    await first.stop();

    const second = await startTestService(prefix, { role: 'api' });
    try {
      const res = await http(second.url as string, `${href}?embedded=author`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ itemCount: 3, status: 'paid', _embedded: { author: { name: 'Grace Hopper' } } });
    } finally {
      await second.stop();
    }
  });

  test('two api processes on one Kafka converge: a write through one is readable through the other', async () => {
    const a = await startTestService(prefix, { role: 'api' });
    const b = await startTestService(prefix, { role: 'api' });
    try {
      const created = await http(a.url as string, '/orders', {
        body: {
          order: [
            { orderNumber: 2, itemCount: 1, status: 'open' },
            { orderNumber: 3, itemCount: 1, status: 'open' },
          ],
        },
      });
      const hrefs = created.body._embedded.orders.map(
        (o: { _links: { self: { href: string } } }) => o._links.self.href,
      );
      // b reads a's write with its consumer lag, seconds on a busy machine; the loop ends as soon as both are there.
      const deadline = Date.now() + 30000;
      let seen: number[] = [];
      while (Date.now() < deadline) {
        seen = await Promise.all(hrefs.map(async (h: string) => (await http(b.url as string, h)).status));
        if (seen.every((s) => s === 200)) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(seen).toEqual([200, 200]);
    } finally {
      await a.stop();
      await b.stop();
    }
  }, 90000);
});
