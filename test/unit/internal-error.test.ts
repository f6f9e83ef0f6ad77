import type { FastifyInstance } from 'fastify';
import { bareApp } from '../support/bare-app';
import { http } from '../support/http';

/** An unexpected failure in a route is a 500 Problem with a logref and nothing internal. */
describe('500', () => {
  let app: FastifyInstance;
  const logged: string[] = [];

  beforeAll(async () => {
    app = await bareApp([
      {
        collections: ['boom'],
        plugin: async (a) => {
          a.get('/boom', async (request) => {
            logged.push(request.id);
            throw new Error('secret detail at /srv/app/db.ts:42 password=hunter2');
          });
        },
      },
    ]);
  });
  afterAll(() => app.close());

  test('answers 500 internal-error with logref = request id and no internals', async () => {
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const res = await http(base, '/boom');
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = res.body;
    expect(body).toMatchObject({
      type: 'https://hookstream.dev/problems/internal-error',
      status: 500,
      instance: '/boom',
    });
    expect(body.logref).toBe(logged[0]);
    expect(res.text).not.toMatch(/secret|hunter2|db\.ts|stack/);
  });
});
