import type { FastifyInstance } from 'fastify';
import { halResource, link } from '../../src/http/hal';
import { pageLink } from '../../src/http/paging';
import { TENANT_A_KEY } from '../support/api-keys';
import { bareApp } from '../support/bare-app';

/** Only links made as page links carry the selection on; a relation that happens to be called `next` does not. */
test('the selection goes onto page links only, and a representation a route keeps is never changed', async () => {
  const kept = halResource(
    { title: 'Chapter 1' },
    { self: link('/chapters/1'), next: link('/chapters/2'), prev: pageLink('/chapters?offset=0&limit=1') },
  );
  const app: FastifyInstance = await bareApp([
    { collections: ['chapters'], plugin: async (a) => void a.get('/chapters/1', async () => kept) },
  ]);
  try {
    const headers = { authorization: `Bearer ${TENANT_A_KEY}` };
    for (let round = 0; round < 2; round += 1) {
      const res = await app.inject({ url: '/chapters/1?fields=title,_links', headers });
      expect(res.statusCode).toBe(200);
      expect(res.json()._links).toEqual({
        self: { href: '/chapters/1' },
        next: { href: '/chapters/2' },
        prev: { href: '/chapters?offset=0&limit=1&fields=title%2C_links' },
      });
    }
    expect(kept._links.prev).toEqual({ href: '/chapters?offset=0&limit=1' });
  } finally {
    await app.close();
  }
});
