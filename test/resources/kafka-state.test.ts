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

  test('overlapping writes of one order on Kafka: every PATCH stays, and a DELETE answered 204 stays done', async () => {
    const api = await startTestService(prefix, { role: 'api' });
    const url = api.url as string;
    try {
      for (let round = 0; round < 5; round++) {
        const created = await http(url, '/orders', { body: { orderNumber: 1, itemCount: 1, status: 'init' } });
        const href = created.headers.get('location') as string;
        const patches = [{ status: `s${round}` }, { itemCount: 70 + round }, { orderNumber: 500 + round }];
        const answers = await Promise.all(patches.map((body) => http(url, href, { method: 'PATCH', body })));
        expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
        expect((await http(url, href)).body).toMatchObject({
          status: `s${round}`,
          itemCount: 70 + round,
          orderNumber: 500 + round,
        });

        const deleted = http(url, href, { method: 'DELETE' });
        const late = [1, 2, 3].map(() => http(url, href, { method: 'PATCH', body: { status: 'late' } }));
        expect((await deleted).status).toBe(204);
        // One that reached the api before the DELETE is applied before it (200); none brings the order back.
        for (const answer of await Promise.all(late)) expect([200, 404]).toContain(answer.status);
        expect((await http(url, href)).status).toBe(404);
      }
    } finally {
      await api.stop();
    }
  }, 90000);

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
