import { connect } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { TENANT_A_KEY } from '../support/api-keys';
import { until } from '../support/until';

/** The app with every convention, listening on a free loopback port. */
async function listening(options: Pick<AppDeps, 'drain' | 'routes'> = {}) {
  const app = await buildApp({
    logger: createLogger('silent'),
    apiKeys: loadConfig({ API_KEYS: `tenant-a:${TENANT_A_KEY}` }).apiKeys,
    bodyLimitBytes: 1024,
    readiness: { kafkaReachable: () => true, viewsCaughtUp: () => true },
    ...options,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: (app.server.address() as { port: number }).port };
}

/** One client connection, kept alive: what it received, whether it was reset, and its end. */
function keptAlive(port: number) {
  const socket = connect(port, '127.0.0.1');
  const seen = { received: '', reset: undefined as Error | undefined };
  socket.on('data', (chunk) => (seen.received += chunk.toString('latin1')));
  socket.on('error', (err) => (seen.reset = err));
  const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, seen, ended };
}

/**
 * A route `/slow` whose answer waits for `release()` (`entered` once a request is in it), and `begun` once the
 * server's close has begun: registered after the conventions, their preClose hooks have run by the time its own does.
 */
function slowRoute(code: 200 | 204 = 200) {
  let release: () => void = () => undefined;
  let closeBegun: () => void = () => undefined;
  let enter: () => void = () => undefined;
  const entered = new Promise<void>((resolve) => (enter = resolve));
  const begun = new Promise<void>((resolve) => (closeBegun = resolve));
  const plugin = async (app: FastifyInstance) => {
    app.addHook('preClose', async () => closeBegun());
    app.get('/slow', async (_request, reply) => {
      await new Promise<void>((resolve) => {
        release = resolve;
        enter();
      });
      return code === 204 ? reply.code(204).send() : { done: true };
    });
  };
  return { route: { collections: ['slow'], plugin }, entered, begun, release: () => release() };
}

/*
 * A request that reaches a server already closing, on a connection kept alive, gets a Problem saying to try again,
 * as every other 503 does; not Fastify's own plain JSON, which has no Retry-After and no request id.
 */
test('a request arriving while the server closes is a 503 Problem with Retry-After and its request id', async () => {
  const { route, entered, begun, release } = slowRoute();
  const { app, port } = await listening({ routes: [route] });
  const { socket, seen, ended } = keptAlive(port);
  const request = (id: string) =>
    `GET /slow HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${TENANT_A_KEY}\r\nx-request-id: ${id}\r\n\r\n`;
  // The first request keeps the connection busy, so the close waits for it; the second comes on that connection
  // once the close has begun.
  socket.write(request('first'));
  await entered;
  const closed = app.close();
  await begun;
  // Fastify's listener runs first: by the time this one runs, the second request has been routed (and its answer
  // queued behind the first's).
  const routed = new Promise<void>((resolve) =>
    app.server.on('request', (req) => req.headers['x-request-id'] === 'second' && resolve()),
  );
  socket.write(request('second'));
  await routed;
  release();
  await Promise.all([closed, ended]);
  const answers = seen.received.split(/(?=HTTP\/1\.1 )/);
  expect(answers).toHaveLength(2);
  expect(answers[0]).toMatch(/^HTTP\/1\.1 200 /);
  const [head, body] = answers[1].split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 503 /);
  expect(head).toMatch(/\r\ncontent-type: application\/problem\+json/i);
  expect(head).toMatch(/\r\nretry-after: 1\r\n/i);
  expect(head).toMatch(/\r\nx-request-id: second\r\n/i);
  expect(head).toMatch(/\r\nconnection: close\r\n/i);
  expect(JSON.parse(body)).toMatchObject({ status: 503, logref: 'second', instance: '/slow' });
});

/*
 * A closing server stops taking connections, and a connection kept alive that brings its next request within the
 * drain is answered (the 503 above, closing it) instead of being cut: a client that sent on an idle connection the
 * server then closed gets a reset, and cannot tell whether its POST was taken. Node closes idle connections as its
 * server closes; the drain comes first.
 */
test('a kept-alive connection idle as the server closes is answered, not reset, when it sends next', async () => {
  // Long enough for this test to notice the close and send on a machine however busy; ends when the client leaves.
  const { app, port } = await listening({ drain: { limitMs: 20000, quietMs: 20000 } });
  const { socket, seen, ended } = keptAlive(port);
  const request = (id: string) => `GET /health/live HTTP/1.1\r\nhost: localhost\r\nx-request-id: ${id}\r\n\r\n`;
  socket.write(request('first'));
  await until(async () => /\r\n\r\n/.test(seen.received) || undefined);
  const closed = app.close();
  // The close has begun once no new connection is taken; the kept-alive one is idle then.
  await until(async () => ((await accepts(port)) ? undefined : true));
  socket.write(request('second'));
  await Promise.all([closed, ended]);
  expect(seen.reset).toBeUndefined();
  const answers = seen.received.split(/(?=HTTP\/1\.1 )/);
  expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 503']);
  expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
  expect(answers[1]).toMatch(/\r\nx-request-id: second\r\n/i);
});

/** Whether a new connection to the port is taken (and then closed again). */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(port, '127.0.0.1');
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

test('a kept-alive connection that sends nothing more is closed once the drain is quiet; the close completes', async () => {
  // A limit far past the test's own timeout: only the quiet ending lets the close complete in time.
  const { app, port } = await listening({ drain: { limitMs: 600000, quietMs: 100 } });
  const { socket, seen, ended } = keptAlive(port);
  socket.write('GET /health/live HTTP/1.1\r\nhost: localhost\r\n\r\n');
  await until(async () => /\r\n\r\n/.test(seen.received) || undefined);
  await app.close();
  await ended;
  expect(seen.received).toMatch(/^HTTP\/1\.1 200 /);
});

/*
 * A request taken before the close began (waiting on Kafka, say) is answered as usual, and its answer closes the
 * connection: left open, the client's next request would meet a process about to drop it (a reset).
 */
test.each([
  ['a 200 with a body', 200],
  ['a bodyless 204', 204],
])('%s under way as the server closes says Connection: close, and its connection ends cleanly', async (_, code) => {
  const { route, entered, begun, release } = slowRoute(code as 200 | 204);
  // A drain far longer than the test: the connection ends because its answer said close, not because the drain did.
  const { app, port } = await listening({ routes: [route], drain: { limitMs: 600000, quietMs: 600000 } });
  const { socket, seen, ended } = keptAlive(port);
  socket.write(`GET /slow HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${TENANT_A_KEY}\r\n\r\n`);
  await entered;
  const closed = app.close();
  await begun;
  release();
  await Promise.all([ended, closed]);
  expect(seen.reset).toBeUndefined();
  const [head] = seen.received.split('\r\n\r\n');
  expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${code} `));
  expect(head).toMatch(/\r\nconnection: close\r\n/i);
});
