import type { Server } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { once } from 'node:events';
import { answerClientError } from '../../src/http/client-errors';
import { rawAnswers } from '../../src/http/raw-answers';
import { problemType } from '../../src/problems/problem-types';
import { rawExchange } from '../support/raw-exchange';
import { capturedLogger } from './fakes';

/*
 * Requests Node's parser refuses never reach Fastify: they are answered and logged by answerClientError, here on a
 * plain Node server as the app wires it (clientErrorHandler).
 */
const KEY = 'secret-key-0123456789abcdef';

/** What methodsPlugin knows of the app's paths: here, one collection. */
const allowedOf = (path: string) => (path === '/orders' ? ['GET', 'HEAD', 'OPTIONS', 'POST'] : undefined);

async function serve(answerAfterMs = 0): Promise<{ port: number; lines: Record<string, unknown>[]; server: Server }> {
  const { logger, lines } = capturedLogger('info');
  const server = createHttpServer((_req, res) => setTimeout(() => res.end(), answerAfterMs));
  server.on('clientError', (err, socket) => answerClientError(err, socket, rawAnswers(logger), allowedOf));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as { port: number }).port, lines, server: server as unknown as Server };
}

const raw = rawExchange;

describe('requests the HTTP parser refuses', () => {
  test('the log line has the error without the bytes it kept: no API key, and no copy of a huge header', async () => {
    const { port, lines, server } = await serve();
    try {
      const bad = `GET /tasks?token=abc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nBad Header: x\r\n\r\n`;
      const answer = await raw(port, bad);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      const body = JSON.parse(answer.split('\r\n\r\n')[1]);
      // The Problem names the path of the request it answers, as every other does.
      expect(body).toMatchObject({ type: problemType('bad-request'), instance: '/tasks' });
      const huge = await raw(port, `GET /orders HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
      expect(huge).toMatch(/^HTTP\/1\.1 431 /);
      const logged = lines.filter((l) => l.msg === 'request completed');
      expect(logged).toHaveLength(2);
      for (const line of logged) {
        const text = JSON.stringify(line);
        expect(text).not.toContain(KEY);
        expect(text).not.toContain('rawPacket');
        expect(text.length).toBeLessThan(4000);
        // What says why is kept: the parser's code, and the stack.
        expect(line.err).toMatchObject({ code: expect.stringMatching(/^HPE_/), stack: expect.any(String) });
      }
      expect(logged.map((l) => l.reqId)).toEqual([body.logref, expect.any(String)]);
    } finally {
      server.close();
    }
  });

  test('a request line that is no request names no path', async () => {
    const { port, server } = await serve();
    try {
      const answer = await raw(port, 'NOT-HTTP\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(JSON.parse(answer.split('\r\n\r\n')[1]).instance).toBe('/');
    } finally {
      server.close();
    }
  });

  // DESIGN.md: an unsupported method on a known path is 405 with Allow, whatever the method; Node's parser refuses
  // the ones it does not know (and a lower-case one) before any route is looked up.
  test.each(['FOO', 'get', 'BREW'])(
    'the unknown method %s is 405 with Allow on a known path, 404 elsewhere',
    async (m) => {
      const { port, server } = await serve();
      try {
        const known = await raw(port, `${m} /orders HTTP/1.1\r\nHost: x\r\n\r\n`);
        const [head, text] = known.split('\r\n\r\n');
        expect(head).toMatch(/^HTTP\/1\.1 405 /);
        expect(head).toContain('\r\nAllow: GET, HEAD, OPTIONS, POST\r\n');
        expect(head).toContain('\r\nContent-Type: application/problem+json; charset=utf-8\r\n');
        expect(JSON.parse(text)).toMatchObject({
          type: problemType('method-not-allowed'),
          status: 405,
          instance: '/orders',
          detail: `${m} is not supported on /orders; use one of GET, HEAD, OPTIONS, POST.`,
        });
        const unknown = await raw(port, `${m} /nowhere HTTP/1.1\r\nHost: x\r\n\r\n`);
        expect(unknown).toMatch(/^HTTP\/1\.1 404 /);
        expect(unknown).not.toContain('Allow:');
        expect(JSON.parse(unknown.split('\r\n\r\n')[1])).toMatchObject({ type: problemType('not-found') });
      } finally {
        server.close();
      }
    },
  );

  test('a body that comes too slowly is 408 naming the path of its request', async () => {
    const { logger } = capturedLogger('info');
    const server = createHttpServer({ requestTimeout: 300, headersTimeout: 300, connectionsCheckingInterval: 50 });
    server.on('clientError', (err, socket) => answerClientError(err, socket, rawAnswers(logger), allowedOf));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const port = (server.address() as { port: number }).port;
      const answer = await raw(port, 'POST /orders/a<b HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"a"');
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      // The path as a URI reference: what is no part of one is percent-encoded.
      expect(JSON.parse(answer.split('\r\n\r\n')[1])).toMatchObject({ instance: '/orders/a%3Cb' });
    } finally {
      server.close();
    }
  });

  // The bytes Node keeps are the whole chunk: a request before the failing one must not be answered for.
  test.each([
    [
      'the excess of a body longer than its Content-Length',
      'POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{"a":1}',
    ],
    [
      'a request pipelined after a good one',
      'GET /elsewhere HTTP/1.1\r\nHost: x\r\n\r\nFOO /nowhere HTTP/1.1\r\nHost: x\r\n\r\n',
    ],
  ])('%s is answered for itself', async (_what, request) => {
    // The request before is answered later: the parser's error comes first, and is what the client reads.
    const { port, server } = await serve(50);
    try {
      const answer = await raw(port, request);
      expect(answer).not.toMatch(/ 405 /);
      expect(answer).not.toContain('/orders;');
      expect(answer).not.toContain('/elsewhere');
    } finally {
      server.close();
    }
  });
});
