import type { FastifyInstance } from 'fastify';
import { bareApp } from '../support/bare-app';
import { http } from '../support/http';

/**
 * An unexpected failure in a route is a 500 Problem with a logref and nothing internal; a Kafka client's failure is
 * not unexpected: a 503 the client retries.
 */
describe('500', () => {
  let app: FastifyInstance;
  let base: string;
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
          a.get('/kafka-failed', async () => {
            // kafkajs's error as it comes (a name, no problem kind), wrapped as its retries wrap it.
            const closed = Object.assign(new Error('Closed connection'), { name: 'KafkaJSConnectionClosedError' });
            throw Object.assign(new Error('Number of retries exceeded'), {
              name: 'KafkaJSNumberOfRetriesExceeded',
              originalError: closed,
            });
          });
        },
      },
    ]);
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());

  test('answers 500 internal-error with logref = request id and no internals', async () => {
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

  test("a Kafka client's failure that reaches a route is 503 kafka-unavailable with Retry-After, not a 500", async () => {
    const res = await http(base, '/kafka-failed');
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body).toMatchObject({ type: 'https://hookstream.dev/problems/kafka-unavailable', status: 503 });
    expect(res.text).not.toMatch(/Closed connection|retries/);
  });
});
