import { request as rawRequest } from 'node:http';
import type { RunningService } from '../../src/service';
import { http } from '../support/http';
import { startTestService, TENANT_A_KEY, uniquePrefix } from '../support/test-service';

/*
 * Bad input never hurts: a few hundred generated malformed requests, each
 * must get a 4xx Problem, and the service must be healthy afterwards.
 * The generator is seeded, so a failure reproduces.
 */
let service: RunningService;
let base: string;

beforeAll(async () => {
  service = await startTestService(uniquePrefix('robust'), { role: 'api' });
  base = service.url as string;
});
afterAll(() => service.stop());

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PATHS = [
  '/orders',
  '/orders/x',
  '/users',
  '/items/i-widget',
  '/orders/../users',
  '/%2e%2e/orders',
  '/orders?limit=-1',
  '/orders?offset=abc',
  '/orders?limit=1e9',
  '/orders?fields=%00',
  '/orders?embedded[]=x',
  '/orders/' + 'a'.repeat(300),
  '/users?limit=0',
  '/orders?atomic=perhaps',
  '/tasks',
  '/tasks/nope',
  '/tasks?status=odd',
  '/tasks?type=%ff',
  '/subscriptions',
  '/subscriptions/x',
  '/subscriptions/x/deliveries',
  '/subscriptions?limit=x',
];
const BODIES = [
  '{',
  '[]',
  'null',
  '"str"',
  '123',
  '{"order": {}}',
  '{"order": [1,2,3]}',
  '{"order": [null]}',
  '{"orderNumber": "1"}',
  '{"itemCount": 1e400}',
  '{"__proto__": {"polluted": true}}',
  '{"constructor": {"prototype": {"x": 1}}}',
  '\u0000',
  '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}',
  '{"order": [' + '{"orderNumber":1,"itemCount":0,"status":"x"},'.repeat(50) + '{}]}',
  'true',
  '{"status": ' + '"x"'.repeat(3) + '}',
  '{"items": "i-widget"}',
  '{"orderNumber":1,"itemCount":1,"status":"open","author":{"href":"/users/u-ada"}}',
  '{"orderNumber":1,"itemCount":1,"status":"open","items":[1]}',
  '{"type":"countdown","input":{"steps":"1"}}',
  '{"type":"countdown"}',
  '{"type":"countdown","input":{"steps":1,"stepMs":0},"callbackUrl":"gopher://x"}',
  '{"callbackUrl":"http://169.254.169.254/","mode":"once","events":["order.created"]}',
  '{"callbackUrl":1,"mode":"once"}',
  '{"status":"cancelled","UUID":[]}',
];
const TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/xml',
  '',
  'application/merge-patch+json',
  'application/hal+json',
  'multipart/form-data; boundary=x',
  'application/json; charset=latin1',
];
const METHODS = ['POST', 'PUT', 'PATCH', 'DELETE', 'GET', 'TRACE', 'PROPFIND', 'SEARCH', 'OPTIONS'];

/** Sends a request the fetch API would refuse to form (odd methods, headers), over a raw socket. */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; type: string; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const framed = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = rawRequest(
      { host: url.hostname, port: url.port, method, path, headers: framed, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text }),
        );
      },
    );
    req.on('error', reject);
    req.setTimeout(10000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

// 400 requests one after another (each allowed 10 s): with both cores busy they may take more than jest's default 60 s.
test('a few hundred malformed requests all get 4xx Problems, and the service stays healthy', async () => {
  const next = rng(20261121);
  const pick = <T>(xs: T[]) => xs[Math.floor(next() * xs.length)];
  const failures: string[] = [];
  for (let i = 0; i < 400; i++) {
    const method = pick(METHODS);
    const path = pick(PATHS);
    const headers: Record<string, string> = { authorization: `Bearer ${TENANT_A_KEY}` };
    const type = pick(TYPES);
    if (type) headers['content-type'] = type;
    if (next() < 0.1)
      headers.accept = pick(['text/html', 'application/xml', '*/*;q=0', 'garbage;;;', 'application/hal+json']);
    if (next() < 0.05)
      headers.authorization = pick(['Bearer', 'Basic abc', 'Bearer ' + 'x'.repeat(2000), `bearer  ${TENANT_A_KEY}x`]);
    const body = ['GET', 'OPTIONS', 'TRACE'].includes(method) ? undefined : pick(BODIES);
    let res: Awaited<ReturnType<typeof raw>>;
    try {
      res = await raw(method, path, headers, body);
    } catch (err) {
      failures.push(`${method} ${path} [${type}] ${body?.slice(0, 40)} → ${(err as Error).message}`);
      continue;
    }
    const ok2xx = res.status >= 200 && res.status < 300;
    // A few generated requests are valid (a GET of a list, an OPTIONS); everything else must be a 4xx Problem.
    if (ok2xx) continue;
    if (res.status < 400 || res.status >= 500 || !res.type.startsWith('application/problem+json')) {
      failures.push(
        `${method} ${path} [${type}] ${body?.slice(0, 40)} → ${res.status} ${res.type} ${res.text.slice(0, 120)}`,
      );
      continue;
    }
    const problem = JSON.parse(res.text);
    if (problem.status !== res.status || !problem.type || !problem.title || !problem.detail)
      failures.push(`${method} ${path} → incomplete problem ${res.text.slice(0, 120)}`);
  }
  expect(failures).toEqual([]);
  expect((await http(base, '/health/ready')).status).toBe(200);
  const after = await http(base, '/orders', { body: { orderNumber: 1, itemCount: 1, status: 'open' } });
  expect(after.status).toBe(201);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}, 180000);

test('a malformed HTTP request line is answered 400 and the server keeps serving', async () => {
  const { connect } = await import('node:net');
  const url = new URL(base);
  const answer = await new Promise<string>((resolve) => {
    const s = connect(Number(url.port), url.hostname, () => s.write('GARBAGE / HTTP/9.9\r\nHost: x\r\n\r\n'));
    let text = '';
    s.on('data', (d) => {
      text += d.toString();
    });
    s.on('close', () => resolve(text));
    s.setTimeout(5000, () => s.destroy());
  });
  expect(answer).toMatch(/^HTTP\/1\.1 400/);
  expect(answer).toMatch(/content-type: application\/problem\+json/i);
  expect(answer).toContain('"type":"https://hookstream.dev/problems/bad-request"');
  expect((await http(base, '/health/live')).status).toBe(200);
});

test('a method the HTTP parser does not know is 405 with the Allow that OPTIONS gives, on the real server', async () => {
  const allow = await new Promise<string>((resolve, reject) => {
    const url = new URL(base);
    rawRequest({ host: url.hostname, port: url.port, method: 'OPTIONS', path: '/orders', agent: false }, (res) => {
      res.resume();
      resolve(String(res.headers.allow));
    })
      .on('error', reject)
      .end();
  });
  expect(allow).toMatch(/^GET, /);
  const answer = await raw('FOO', '/orders', { authorization: `Bearer ${TENANT_A_KEY}` });
  expect(answer.status).toBe(405);
  expect(answer.type).toBe('application/problem+json; charset=utf-8');
  expect(JSON.parse(answer.text)).toMatchObject({ status: 405, instance: '/orders' });
  expect(JSON.parse(answer.text).detail).toContain(`use one of ${allow}.`);
});
