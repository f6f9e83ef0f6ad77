import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { DEFAULT_HTTP_LIMITS, loadConfig } from '../../src/config';
import { Metrics } from '../../src/metrics/metrics';
import { TENANT_A_KEY } from '../support/api-keys';
import { rawExchange } from '../support/raw-exchange';
import { capturedLogger } from './fakes';

/*
 * README: http_request_duration_seconds counts "every HTTP response of this process", and each request has one
 * `request completed` line. Answers Node writes before Fastify sees the request (its parser's refusals, an Expect,
 * a CONNECT) were in neither.
 */
let app: FastifyInstance;
let port: number;
let lines: Record<string, unknown>[];
let metrics: Metrics;

beforeAll(async () => {
  const captured = capturedLogger('info');
  lines = captured.lines;
  metrics = new Metrics(() => []);
  app = await buildApp({
    logger: captured.logger,
    apiKeys: loadConfig({ API_KEYS: `tenant-a:${TENANT_A_KEY}` }).apiKeys,
    bodyLimitBytes: 1024,
    // A slow body is cut after a second (408).
    http: { ...DEFAULT_HTTP_LIMITS, requestTimeoutMs: 1000, headersTimeoutMs: 1000 },
    readiness: { kafkaReachable: () => true, viewsCaughtUp: () => true },
    metrics,
    routes: [
      {
        collections: ['things'],
        plugin: async (a) => {
          a.post('/things', { schema: { response: {} } }, async () => ({ _links: { self: { href: '/things' } } }));
          a.get('/things/:id', { schema: { response: {} } }, async () => ({ _links: { self: { href: '/things/1' } } }));
        },
      },
    ],
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
});
afterAll(() => app.close());

const raw = (request: string) => rawExchange(port, request);

async function counted(method: string, status: number): Promise<number> {
  const text = await metrics.registry.metrics();
  const series = `http_request_duration_seconds_count{method="${method}",route="unmatched",status_code="${status}"}`;
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line ? Number(line.split(' ')[1]) : 0;
}

const host = 'Host: x\r\n';
/** for answers Fastify writes, which keep the connection open otherwise */
const close = 'Connection: close\r\n';
test.each([
  [
    'a body announced too large (Expect: 100-continue)',
    'POST',
    413,
    `POST /things HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n`,
  ],
  [
    'an Expect the server does not take',
    'POST',
    417,
    `POST /things HTTP/1.1\r\n${host}Expect: foo\r\nContent-Length: 0\r\n\r\n`,
  ],
  ['headers larger than Node reads', 'GET', 431, `GET /things?x=${'a'.repeat(20_000)} HTTP/1.1\r\n${host}\r\n`],
  ['CONNECT', 'CONNECT', 405, `CONNECT x:1 HTTP/1.1\r\n${host}\r\n`],
  ['a method Node does not know', 'OTHER', 405, `FOO /things HTTP/1.1\r\n${host}\r\n`],
  ['a lower-case method', 'OTHER', 405, `get /things HTTP/1.1\r\n${host}\r\n`],
  ['a request line that is no request', 'OTHER', 400, 'NOT-HTTP\r\n\r\n'],
  // The router's refusals: Fastify answers them (frameworkErrors) before any hook runs.
  ['a malformed percent-escape in a path parameter', 'GET', 400, `GET /things/%ZZ HTTP/1.1\r\n${host}${close}\r\n`],
  ['a malformed percent-escape in the path', 'GET', 400, `GET /%ZZ HTTP/1.1\r\n${host}${close}\r\n`],
  [
    'a path parameter longer than the router reads',
    'GET',
    404,
    `GET /things/${'a'.repeat(300)} HTTP/1.1\r\n${host}${close}\r\n`,
  ],
  [
    'a body that comes too slowly (its method read from the request in flight)',
    'POST',
    408,
    `POST /things HTTP/1.1\r\n${host}Authorization: Bearer ${TENANT_A_KEY}\r\nContent-Type: application/json\r\n` +
      'Content-Length: 10\r\n\r\n{"a"',
  ],
])('%s: one request completed line, with its logref, and one observation', async (_what, method, status, request) => {
  const before = await counted(method, status);
  const answer = await raw(request);
  expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
  const logref = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).logref as string;
  const told = lines.filter((l) => l.reqId === logref);
  expect(told).toEqual([
    expect.objectContaining({
      msg: 'request completed',
      res: { statusCode: status },
      responseTime: expect.any(Number),
    }),
  ]);
  expect(await counted(method, status)).toBe(before + 1);
});
