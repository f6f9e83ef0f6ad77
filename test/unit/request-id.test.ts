import type { FastifyInstance } from 'fastify';
import { bareApp } from '../support/bare-app';
import { http } from '../support/http';

/** X-Request-Id: a caller's short printable id is the request id and the Problem's logref; every response echoes it. */
let app: FastifyInstance;
let base: string;
const seen: string[] = [];

beforeAll(async () => {
  app = await bareApp([
    {
      collections: ['ids'],
      plugin: async (a) => {
        a.get('/ids', async (request) => {
          seen.push(request.id);
          return { ok: true };
        });
      },
    },
  ]);
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(() => app.close());

test('a valid X-Request-Id is the request id and is echoed on success', async () => {
  const res = await http(base, '/ids', { headers: { 'x-request-id': 'client-7f3a:retry.2' } });
  expect(res.status).toBe(200);
  expect(res.headers.get('x-request-id')).toBe('client-7f3a:retry.2');
  expect(seen.at(-1)).toBe('client-7f3a:retry.2');
});

test('a Problem carries it as logref and echoes it', async () => {
  const res = await http(base, '/ids', { key: 'wrong-key-0123456789', headers: { 'x-request-id': 'abc-401' } });
  expect(res.status).toBe(401);
  expect(res.headers.get('x-request-id')).toBe('abc-401');
  expect(res.body.logref).toBe('abc-401');
});

test.each([
  ['too long', 'x'.repeat(129)],
  ['with a space', 'two words'],
  ['with a control character', 'a\tb'],
])('an id %s is replaced by a fresh UUID, echoed all the same', async (_why, given) => {
  const res = await http(base, '/ids', { headers: { 'x-request-id': given } });
  expect(res.status).toBe(200);
  const echoed = res.headers.get('x-request-id');
  expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
  expect(seen.at(-1)).toBe(echoed);
});

test('without one, every response still names its request id', async () => {
  const res = await http(base, '/nowhere');
  expect(res.status).toBe(404);
  expect(res.headers.get('x-request-id')).toBe(res.body.logref);
});
