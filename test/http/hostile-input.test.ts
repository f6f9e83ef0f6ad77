import { connect } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { startService, type RunningService } from '../../src/service';
import { http, type HttpResult, type RequestOptions } from '../support/http';
import { EXAMPLE_SERVICE, TENANT_A_KEY, testBrokers, testConfig, uniquePrefix } from '../support/test-service';
import { until } from '../support/until';

/*
 * Hostile input never hurts: prototype names anywhere a client names
 * something, slow clients, keys in query strings, repeated Authorization
 * headers. One real service (all roles, real broker) with its log captured.
 */
const PROTO_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'isPrototypeOf',
  '__defineGetter__',
  'toLocaleString',
];

const logLines: string[] = [];
let service: RunningService;
let base: string;

beforeAll(async () => {
  const config = testConfig(uniquePrefix('hostile'), { LOG_LEVEL: 'info' });
  const logger = createLogger('info', 'hostile-input', {
    write: (line: string) => {
      logLines.push(line);
    },
  });
  service = await startService({ config, brokers: testBrokers(), logger, role: 'all', ...EXAMPLE_SERVICE });
  base = service.url;
});
afterAll(() => service.stop());

const problemType = (kind: string) => `https://hookstream.dev/problems/${kind}`;

/** Status below 500 and, for an error, a complete Problem. */
function expectHandled(res: HttpResult, what: string): void {
  expect({ what, serverError: res.status >= 500 }).toEqual({ what, serverError: false });
  if (res.status >= 400) {
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({
      status: res.status,
      type: expect.stringMatching(/^https:\/\/hookstream\.dev\/problems\//),
    });
  }
}

/** A JSON body sent as written: `JSON.stringify` keeps a computed `__proto__` key, a plain object literal would not. */
function rawJson(body: unknown, method = 'POST', type = 'application/json'): RequestOptions {
  return { method, raw: JSON.stringify(body), headers: { 'content-type': type } };
}

/** One HTTP/1.1 exchange written byte for byte on a fresh socket; the whole answer, once the server closes. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.on('data', (d) => {
      text += d.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.setTimeout(10000, () => socket.destroy(new Error('no answer in 10 s')));
  });
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
const order = (status: string, itemCount = 1) => ({ orderNumber: 7, itemCount, status });
const byName = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : 1);

async function finished(taskId: string): Promise<HttpResult> {
  return until(async () => {
    const res = await http(base, `/tasks/${taskId}`);
    return ['succeeded', 'failed', 'cancelled'].includes(res.body?.status) ? res : undefined;
  });
}

describe('prototype names are ordinary unknown names', () => {
  test('in fields, embedded and embed: the answer for an unknown name, on every kind of resource', async () => {
    const created = await http(base, '/orders', { body: { ...order('open'), author: 'u-ada', items: ['i-widget'] } });
    expect(created.status).toBe(201);
    const task = await http(base, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    await finished(task.body.taskId);
    const sub = await http(base, '/subscriptions', {
      body: { callbackUrl: 'http://127.0.0.1:9/never', mode: 'once', events: ['order.deleted'] },
    });
    expect(sub.status).toBe(201);
    const paths = [
      '/health/live',
      '/health/ready',
      '/',
      '/docs/problems',
      '/orders',
      `/orders/${created.body.id}`,
      '/users/u-ada',
      '/tasks',
      `/tasks/${task.body.taskId}`,
      '/subscriptions',
      `/subscriptions/${sub.body.UUID}`,
      `/subscriptions/${sub.body.UUID}/deliveries`,
    ];
    const mismatches: string[] = [];
    for (const path of paths) {
      const key = path.startsWith('/health') ? null : undefined;
      for (const param of ['fields', 'embedded', 'embed']) {
        const reference = await http(base, `${path}?${param}=no-such-name`, { key });
        expect(reference.status).toBe(200);
        for (const name of PROTO_NAMES) {
          const res = await http(base, `${path}?${param}=${encodeURIComponent(name)}`, { key });
          if (res.status !== 200 || JSON.stringify(res.body) !== JSON.stringify(reference.body)) {
            mismatches.push(`${path}?${param}=${name} → ${res.status} ${res.text.slice(0, 160)}`);
          }
        }
      }
    }
    expect(mismatches).toEqual([]);
  });

  test('GET /health/live?embedded=__proto__ (public, no key) answers 200 with no _embedded', async () => {
    for (const name of PROTO_NAMES) {
      const res = await http(base, `/health/live?embedded=${name}`, { key: null });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ _links: { self: { href: '/health/live' } }, status: 'up' });
    }
  });

  test('mixed with real relations, only the real ones are embedded', async () => {
    const created = await http(base, '/orders', { body: { ...order('open'), author: 'u-ada' } });
    const query = 'embedded=__proto__,author,toString,constructor&fields=_embedded,__proto__';
    const res = await http(base, `/orders/${created.body.id}?${query}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['_embedded']);
    expect(Object.keys(res.body._embedded)).toEqual(['author']);
    expect(res.body._embedded.author).toMatchObject({ id: 'u-ada', name: 'Ada Lovelace' });
  });

  test('as query parameters, filters and paging values: ignored, or a 400 Problem, never a 500', async () => {
    const plain = await http(base, '/orders?limit=5');
    for (const name of PROTO_NAMES) {
      const q = encodeURIComponent(name);
      const ignored = await http(base, `/orders?limit=5&${q}=1&${q}[x]=2`);
      expect({ name, status: ignored.status, body: ignored.body }).toEqual({ name, status: 200, body: plain.body });
      const byType = await http(base, `/tasks?type=${q}`);
      expect({ name, status: byType.status, total: byType.body.total }).toEqual({ name, status: 200, total: 0 });
      const invalid = [`/tasks?status=${q}`, `/orders?offset=${q}`, `/orders?limit=${q}`, `/subscriptions?limit=${q}`];
      for (const path of invalid) {
        const res = await http(base, path);
        expectHandled(res, path);
        expect(res.body.type).toBe(problemType('validation-failed'));
      }
      const atomic = await http(base, `/orders?atomic=${q}`, { body: { order: [order('open')] } });
      expect({ name, status: atomic.status }).toEqual({ name, status: 400 });
    }
  });

  test('as path segments: 404 Problems', async () => {
    for (const name of PROTO_NAMES) {
      const paths = [
        `/tasks/${name}`,
        `/subscriptions/${name}`,
        `/subscriptions/${name}/deliveries`,
        `/orders/${name}`,
        `/users/${name}`,
        `/${name}`,
      ];
      for (const path of paths) {
        const res = await http(base, path);
        expectHandled(res, path);
        expect({ path, status: res.status }).toEqual({ path, status: 404 });
      }
    }
  });

  test('as JSON body keys and values: 400 Problems naming the field, or accepted as plain data', async () => {
    const existing = await http(base, '/orders', { body: order('open') });
    const itsPath = `/orders/${existing.body.id}`;
    const before = (await http(base, itsPath)).body;
    const callbackUrl = 'http://127.0.0.1:9/x';
    for (const name of PROTO_NAMES) {
      const asKey = await http(base, '/orders', rawJson({ ...order('open'), [name]: { a: 1 } }));
      expectHandled(asKey, `POST /orders with key ${name}`);
      expect(asKey.status).toBe(400);
      const patched = await http(base, itsPath, rawJson({ [name]: { a: 1 } }, 'PATCH', 'application/merge-patch+json'));
      expectHandled(patched, `PATCH with key ${name}`);
      expect(patched.status).toBe(400);
      // Deleting an inherited name deletes nothing: the order stays as it was (`__proto__` the parser refuses).
      const deleting = await http(base, itsPath, rawJson({ [name]: null }, 'PATCH', 'application/merge-patch+json'));
      expectHandled(deleting, `PATCH deleting ${name}`);
      if (name !== '__proto__') {
        expect({ name, status: deleting.status, orderStatus: deleting.body.status }).toEqual({
          name,
          status: 200,
          orderStatus: 'open',
        });
      }
      const element = { _links: { self: { href: `/orders/${name}` } }, status: 'x' };
      const bulk = await http(base, '/orders', { method: 'PATCH', body: { order: [element] } });
      expectHandled(bulk, `bulk PATCH of /orders/${name}`);
      expectHandled(await http(base, '/orders', rawJson({ [name]: [order('open')] })), `bulk body keyed ${name}`);
      const tasks = [
        { type: name, input: {} },
        { type: 'countdown', input: { steps: 1, stepMs: 0, [name]: 1 } },
      ];
      for (const body of tasks) {
        const res = await http(base, '/tasks', rawJson(body));
        expectHandled(res, `POST /tasks ${JSON.stringify(body)}`);
        expect(res.status).toBe(400);
      }
      for (const body of [
        { callbackUrl, mode: name, events: ['order.created'] },
        { callbackUrl, mode: 'once', events: [name] },
        { callbackUrl, mode: 'once', taskId: name },
      ]) {
        const res = await http(base, '/subscriptions', { body });
        expectHandled(res, `POST /subscriptions ${JSON.stringify(body)}`);
        expect(res.status).toBe(400);
      }
      expect((await http(base, `/subscriptions/${name}`, { method: 'PUT', body: { UUID: name } })).status).toBe(404);
    }
    // Only updatedAt moves (the deleting patches were writes); no field was added or lost.
    const { updatedAt: _after, ...after } = (await http(base, itsPath)).body;
    const { updatedAt: _before, ...unchanged } = before;
    expect(after).toEqual(unchanged);
  });

  test('as order statuses, counted by the order-report task as ordinary statuses; nothing is polluted', async () => {
    const statuses = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    for (const [i, status] of statuses.entries()) {
      for (const itemCount of [i + 1, 10]) {
        expect((await http(base, '/orders', { body: order(status, itemCount) })).status).toBe(201);
      }
    }
    const task = await http(base, '/tasks', { body: { type: 'order-report', input: { statuses } } });
    expect(task.status).toBe(202);
    const done = await finished(task.body.taskId);
    expect(done.body.status).toBe('succeeded');
    const byStatus = Object.entries(done.body.result.byStatus as Record<string, unknown>).sort(byName);
    const expected = statuses.map((s, i): [string, unknown] => [s, { orders: 2, items: i + 1 + 10 }]);
    expect(byStatus).toEqual(expected.sort(byName));
    expect(done.body.result).toMatchObject({ orders: 8 });
    // The runner runs in this process (role all): Object.prototype must be untouched.
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('orders');
    expect(Object.getOwnPropertyNames(Object)).not.toContain('orders');
    expect((await http(base, '/health/ready')).status).toBe(200);
  });
});

describe('API keys and the log', () => {
  test("a key in a query string never reaches the log; the API's own parameters are still logged", async () => {
    const secrets = ['a', 'b', 'c', 'd'].map((c) => `QS-SECRET-${c.repeat(18)}`);
    logLines.length = 0;
    const query = `api_key=${secrets[0]}&access_token=${secrets[1]}&fields=count&key=${secrets[2]}&${secrets[3]}`;
    expect((await http(base, `/orders?${query}`)).status).toBe(200);
    expect((await http(base, `/orders?api_key=${secrets[0]}`, { key: null })).status).toBe(401);
    expect((await http(base, `/no/such/path?token=${secrets[1]}`)).status).toBe(404);
    const log = logLines.join('');
    expect(logLines.length).toBeGreaterThan(0);
    for (const secret of [...secrets, TENANT_A_KEY]) expect(log).not.toContain(secret);
    const incoming = logLines
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request completed')
      .map((l) => l.req.url);
    expect(incoming).toContain(
      '/orders?api_key=[redacted]&access_token=[redacted]&fields=count&key=[redacted]&[redacted]',
    );
    expect(incoming).toContain('/no/such/path?token=[redacted]');
  });

  test('two Authorization headers are a 401 Problem, even when both carry the valid key; one is 200', async () => {
    const port = Number(new URL(base).port);
    const request = (authorizations: string[]) =>
      'GET /orders?limit=1 HTTP/1.1\r\nHost: x\r\n' +
      `${authorizations.map((a) => `Authorization: ${a}\r\n`).join('')}Connection: close\r\n\r\n`;
    const valid = `Bearer ${TENANT_A_KEY}`;
    const wrong = 'Bearer wrong-key-0123456789';
    expect(statusOf(await rawExchange(port, request([valid])))).toBe(200);
    for (const pair of [
      [valid, valid],
      [valid, wrong],
      [wrong, valid],
    ]) {
      const answer = await rawExchange(port, request(pair));
      expect(statusOf(answer)).toBe(401);
      expect(answer).toMatch(/content-type: application\/problem\+json/i);
      expect(answer).toContain(`"type":"${problemType('unauthorized')}"`);
    }
  });
});

describe('slow clients are cut after bounded times', () => {
  const SHORT = {
    HTTP_REQUEST_TIMEOUT_MS: '1500',
    HTTP_HEADERS_TIMEOUT_MS: '1000',
    HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
  };
  /** Generous: the bound plus the check interval plus a busy machine's delays. */
  const SLACK_MS = 10000;
  const apps: FastifyInstance[] = [];
  let port: number;
  let echoed = 0;

  /** The app alone (no Kafka needed for these routes), built with the limits a config with `env` gives. */
  async function startApp(env: Record<string, string>): Promise<{ app: FastifyInstance; port: number }> {
    const config = testConfig(uniquePrefix('slow'), env);
    const echo = async (a: FastifyInstance) => {
      a.post('/echo', async (req) => {
        echoed += 1;
        return { _links: { self: { href: '/echo' } }, got: req.body };
      });
    };
    const app = await buildApp({
      logger: createLogger('silent'),
      apiKeys: config.apiKeys,
      bodyLimitBytes: config.bodyLimitBytes,
      http: config.http,
      readiness: { kafkaReachable: () => true, viewsCaughtUp: () => true },
      routes: [{ collections: [], plugin: echo }],
    });
    apps.push(app);
    return { app, port: Number(new URL(await app.listen({ port: 0, host: '127.0.0.1' })).port) };
  }

  beforeAll(async () => {
    expect(testConfig('t.', { ...SHORT, HTTP_MAX_CONNECTIONS: '30' }).http).toMatchObject({
      requestTimeoutMs: 1500,
      headersTimeoutMs: 1000,
      keepAliveTimeoutMs: 1000,
      maxConnections: 30,
    });
    ({ port } = await startApp(SHORT));
  });
  afterAll(() => Promise.all(apps.map((a) => a.close())));

  /** A socket that sends `head`, then one byte of `drip` every 100 ms until the server closes it. */
  function dripping(to: number, head: string, drip: string): Promise<{ answer: string; ms: number }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      let answer = '';
      const socket = connect(to, '127.0.0.1', () => socket.write(head));
      const timer = setInterval(() => {
        if (socket.writable) socket.write(drip);
      }, 100);
      socket.on('data', (d) => {
        answer += d.toString();
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ answer, ms: Date.now() - started });
      });
      setTimeout(() => {
        socket.destroy();
        reject(new Error('never cut'));
      }, 60000).unref();
    });
  }
  const slowHeaders = (to: number) => dripping(to, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ', 'a');

  /** A 408 Problem, then the close, within the bound (plus slack). */
  const expect408Within =
    (boundMs: number) =>
    ({ answer, ms }: { answer: string; ms: number }) => {
      expect(statusOf(answer)).toBe(408);
      expect(answer).toMatch(/content-type: application\/problem\+json/i);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      expect(body).toMatchObject({ type: problemType('request-timeout'), status: 408 });
      expect(ms).toBeLessThan(boundMs + SLACK_MS);
    };

  test('20 sockets sending a body one byte at a time each get a 408 Problem and are closed', async () => {
    const head =
      `POST /echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TENANT_A_KEY}\r\n` +
      'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n';
    const results = await Promise.all(Array.from({ length: 20 }, () => dripping(port, head, ' ')));
    results.forEach(expect408Within(1500));
    expect(echoed).toBe(0);
    expect((await http(`http://127.0.0.1:${port}`, '/health/live', { key: null })).status).toBe(200);
  });

  test('20 sockets sending headers one byte at a time each get a 408 Problem and are closed', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => slowHeaders(port)));
    results.forEach(expect408Within(1000));
    expect((await http(`http://127.0.0.1:${port}`, '/health/live', { key: null })).status).toBe(200);
  });

  test('a body sent in time is served: the bounds cut only slow clients', async () => {
    const res = await http(`http://127.0.0.1:${port}`, '/echo', { body: { hello: 'world' } });
    expect(res.status).toBe(200);
    expect(res.body.got).toEqual({ hello: 'world' });
  });

  test('above HTTP_MAX_CONNECTIONS a connection is dropped; once slow ones are cut, new ones are served', async () => {
    // Bounds long enough that all 30 holders are connected before the first is cut, even on a busy machine.
    const capped = await startApp({
      HTTP_REQUEST_TIMEOUT_MS: '6000',
      HTTP_HEADERS_TIMEOUT_MS: '6000',
      HTTP_MAX_CONNECTIONS: '30',
    });
    const connections = promisify(capped.app.server.getConnections.bind(capped.app.server));
    const probe = () => rawExchange(capped.port, 'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const holders = Array.from({ length: 30 }, () => slowHeaders(capped.port));
    await until(async () => ((await connections()) === 30 ? true : undefined));
    const dropped = await probe().catch((err: NodeJS.ErrnoException) => `[${err.code}]`);
    expect(dropped).not.toMatch(/^HTTP/);
    (await Promise.all(holders)).forEach(expect408Within(6000));
    expect(statusOf(await probe())).toBe(200);
  });
});
