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
 * A closing server's connection kept alive that brings its next request within the drain is answered (the 503 above,
 * closing it) instead of being cut: a client that sent on an idle connection the server then closed gets a reset, and
 * cannot tell whether its POST was taken. Node closes idle connections as its server closes; the drain comes first.
 * The server also listens until the drain ends, so a connection made meanwhile gets the same 503: closed as the close
 * began, the listener reset the connections the system had queued, whose requests may have been sent already.
 */
test('during the drain a kept-alive connection and a new one are each answered 503, not reset', async () => {
  // Quiet for long enough that this test notices the close and sends on a machine however busy (each request and
  // connection during the drain starts the quiet again); it ends 2 s after the last.
  const { app, port } = await listening({ drain: { limitMs: 20000, quietMs: 2000 } });
  const { socket, seen, ended } = keptAlive(port);
  const request = (id: string) => `GET /health/live HTTP/1.1\r\nhost: localhost\r\nx-request-id: ${id}\r\n\r\n`;
  socket.write(request('first'));
  await until(async () => /\r\n\r\n/.test(seen.received) || undefined);
  expect(await answerOnNewConnection(port, request('before'))).toMatch(/^HTTP\/1\.1 200 /);
  const closed = app.close();
  // The close has begun once a request on a new connection is answered 503; the kept-alive one is idle then.
  const fresh = await until(async () => {
    const answer = await answerOnNewConnection(port, request('fresh'));
    return answer.startsWith('HTTP/1.1 503') ? answer : undefined;
  });
  expect(fresh).toMatch(/\r\nconnection: close\r\n/i);
  expect(fresh).toMatch(/\r\nretry-after: 1\r\n/i);
  socket.write(request('second'));
  await Promise.all([closed, ended]);
  expect(seen.reset).toBeUndefined();
  const answers = seen.received.split(/(?=HTTP\/1\.1 )/);
  expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 503']);
  expect(answers[1]).toMatch(/\r\nconnection: close\r\n/i);
  expect(answers[1]).toMatch(/\r\nx-request-id: second\r\n/i);
  // The drain over, the server listens no more.
  expect(await answerOnNewConnection(port, request('after'))).toBe('refused');
});

/** What a request on a new connection is answered, read to the connection's end; 'refused' if none is taken. */
function answerOnNewConnection(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const probe = connect(port, '127.0.0.1');
    let received = '';
    let connected = false;
    probe.once('connect', () => {
      connected = true;
      probe.write(request);
    });
    probe.on('data', (chunk) => {
      received += chunk.toString('latin1');
      // A 200 keeps the connection alive: its answer is all this needs.
      if (/^HTTP\/1\.1 200 [^]*\r\n\r\n/.test(received)) probe.destroy();
    });
    probe.once('error', (err: NodeJS.ErrnoException) => {
      if (!connected) resolve(err.code === 'ECONNREFUSED' ? 'refused' : String(err.code));
    });
    probe.once('close', () => resolve(received));
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
  // A drain that ends only at its limit: the connection ends before it, because its answer said close.
  const { app, port } = await listening({ routes: [route], drain: { limitMs: 3000, quietMs: 600000 } });
  const { socket, seen, ended } = keptAlive(port);
  socket.write(`GET /slow HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${TENANT_A_KEY}\r\n\r\n`);
  await entered;
  const closed = app.close();
  await begun;
  release();
  const first = await Promise.race([ended.then(() => 'connection ended'), closed.then(() => 'server closed')]);
  await closed;
  expect(first).toBe('connection ended');
  expect(seen.reset).toBeUndefined();
  const [head] = seen.received.split('\r\n\r\n');
  expect(head).toMatch(new RegExp(`^HTTP/1\\.1 ${code} `));
  expect(head).toMatch(/\r\nconnection: close\r\n/i);
});
