import { Metrics } from '../../src/metrics/metrics';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { MAX_BODY_DEPTH, nestsDeeperThan } from '../../src/http/json-body';
import { problemType } from '../../src/problems/problem-types';
import { instanceUri } from '../../src/http/instance-uri';
import { bearer, call, inMemoryApi, type InMemoryApi } from './in-memory-api';

/*
 * Bodies, query values and headers a careless or hostile client sends, on the api's real routes over in-memory
 * Kafka: each gets a 4xx Problem that says what was wrong, never a 500, and one sent by habit (a JSON Content-Type
 * on a DELETE with no body) is simply served.
 */
let api: InMemoryApi;
beforeAll(async () => {
  api = await inMemoryApi();
});
afterAll(() => api.app.close());

const order = { orderNumber: 9, itemCount: 1, status: 'open' };
const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

async function createOrder(): Promise<string> {
  const res = await call(api.app, '/orders', { body: order });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

describe('nesting', () => {
  test('nestsDeeperThan counts objects and arrays, the top level as 1', () => {
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan(JSON.parse(nested(100_000)), MAX_BODY_DEPTH)).toBe(true);
  });

  test('a merge patch thousands of levels deep is a 400 Problem, not a 500, and changes nothing', async () => {
    const id = await createOrder();
    const patch = `{"status":${nested(5000)}}`;
    for (const url of [`/orders/${id}`, '/orders']) {
      const res = await call(api.app, url, {
        method: 'PATCH',
        raw:
          url === '/orders'
            ? `{"order":[{"_links":{"self":{"href":"/orders/${id}"}},"status":${nested(5000)}}]}`
            : patch,
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('malformed-body'));
      expect(res.body.detail).toMatch(/more than 100 levels/);
    }
    expect((await call(api.app, `/orders/${id}`)).body.status).toBe('open');
  });

  test('MAX_BODY_DEPTH levels are read; one more is refused', async () => {
    const json = { 'content-type': 'application/json' };
    const ok = await call(api.app, '/orders', {
      raw: `{"orderNumber":1,"itemCount":1,"status":"open","x":${nested(99)}}`,
      headers: json,
    });
    expect(ok.body.type).toBe(problemType('validation-failed'));
    const deep = await call(api.app, '/orders', {
      raw: `{"orderNumber":1,"itemCount":1,"status":"open","x":${nested(100)}}`,
      headers: json,
    });
    expect(deep.body.type).toBe(problemType('malformed-body'));
  });
});

describe('query values', () => {
  test.each(['limit=1e309', 'limit=Infinity', 'offset=1e309', 'limit=-Infinity'])(
    '?%s is a 400 naming the parameter, not a page without limit',
    async (query) => {
      const res = await call(api.app, `/orders?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('validation-failed'));
      expect(res.body.errors[0].instance).toBe(`/querystring/${query.split('=')[0]}`);
    },
  );

  test('finite values still pass: ?limit=100&offset=0', async () => {
    expect((await call(api.app, '/orders?limit=100&offset=0')).status).toBe(200);
  });

  test.each(['limit=0x10', 'limit=%2010', 'offset=1e3', 'limit=10%20', 'offset=+1', 'limit=0b11', 'limit=5.0'])(
    '?%s is a 400: a number in a query is written in decimal digits',
    async (query) => {
      const res = await call(api.app, `/orders?${query}`);
      expect([res.status, res.body.errors?.[0]?.instance]).toEqual([400, `/querystring/${query.split('=')[0]}`]);
    },
  );

  test('the form is told before the range: ?limit=1e3 is no decimal integer, whatever 1000 is', async () => {
    const res = await call(api.app, '/orders?limit=1e3');
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0].detail).toMatch(/decimal digits, with no fraction/);
  });

  test('every offending parameter is named, as every offending field of a body is', async () => {
    const pointers = async (url: string) =>
      ((await call(api.app, url)).body.errors as { instance: string }[]).map((e) => e.instance).sort();
    expect(await pointers('/orders?limit=0&offset=-1')).toEqual(['/querystring/limit', '/querystring/offset']);
    expect(await pointers('/tasks?limit=0&status=bogus')).toEqual(['/querystring/limit', '/querystring/status']);
    expect(await pointers('/orders?limit=0x10&offset=-1')).toEqual(['/querystring/limit', '/querystring/offset']);
  });
});

describe('bodies', () => {
  test('an empty body with a JSON Content-Type is no body: DELETE is served', async () => {
    const id = await createOrder();
    const res = await call(api.app, `/orders/${id}`, {
      method: 'DELETE',
      raw: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(204);
  });

  test('an empty body where one is required is a 400 naming the body', async () => {
    const res = await call(api.app, '/orders', { raw: '', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect([problemType('validation-failed'), problemType('malformed-body')]).toContain(res.body.type);
  });

  test('a __proto__ key is refused as such, not as invalid JSON', async () => {
    for (const raw of ['{"orderNumber":1,"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}']) {
      const res = await call(api.app, '/orders', { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('malformed-body'));
      expect(res.body.detail).toMatch(/__proto__/);
    }
  });

  test('text in a charset other than UTF-8 is 415 rather than stored garbled; ASCII under any label is read', async () => {
    const latin1 = await api.app.inject({
      method: 'POST',
      url: '/orders',
      headers: { ...bearer(), 'content-type': 'application/json; charset=iso-8859-1' },
      payload: Buffer.from(JSON.stringify({ ...order, status: 'café' }), 'latin1'),
    });
    expect(latin1.statusCode).toBe(415);
    expect(latin1.json().type).toBe(problemType('unsupported-media-type'));
    for (const charset of ['utf-8', 'UTF-8', '"utf-8"', 'utf8', 'us-ascii', 'iso-8859-1']) {
      const res = await call(api.app, '/orders', {
        raw: JSON.stringify(order),
        headers: { 'content-type': `application/json; charset=${charset}` },
      });
      expect(res.status).toBe(201);
    }
    const utf8 = await call(api.app, '/orders', {
      raw: JSON.stringify({ ...order, status: 'café' }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(utf8.body.status).toBe('café');
    // US-ASCII holds no "é": so labelled, the body is mislabelled, and refused as Latin-1's was.
    const ascii = await call(api.app, '/orders', {
      raw: JSON.stringify({ ...order, status: 'café' }),
      headers: { 'content-type': 'application/json; charset=us-ascii' },
    });
    expect(ascii.status).toBe(415);
  });

  test('a body declared UTF-16 is 415 even when its bytes are all below 0x80 (ASCII text in UTF-16 is not ASCII)', async () => {
    for (const charset of ['utf-16', 'UTF-16LE', 'utf-32', 'utf-7']) {
      const res = await api.app.inject({
        method: 'POST',
        url: '/orders',
        headers: { ...bearer(), 'content-type': `application/json; charset=${charset}` },
        payload: Buffer.from(JSON.stringify(order), 'utf16le'),
      });
      expect(res.statusCode).toBe(415);
      expect(res.json().type).toBe(problemType('unsupported-media-type'));
    }
  });

  test('a charset no standard names (EBCDIC) is 415 even for ASCII bytes; so is a charset named twice', async () => {
    for (const contentType of [
      'application/json; charset=cp037',
      'application/json; charset=ebcdic',
      'application/json; charset=utf-8; charset=iso-8859-1',
      'application/json; charset=utf-8; CHARSET=utf-8',
    ]) {
      const res = await call(api.app, '/orders', {
        raw: JSON.stringify(order),
        headers: { 'content-type': contentType },
      });
      expect([contentType, res.status, res.body.type]).toEqual([
        contentType,
        415,
        problemType('unsupported-media-type'),
      ]);
    }
    // Labels the WHATWG Encoding Standard knows as ASCII-compatible read ASCII as it is.
    for (const charset of ['windows-1252', 'koi8-r', 'shift_jis']) {
      const res = await call(api.app, '/orders', {
        raw: JSON.stringify(order),
        headers: { 'content-type': `application/json; charset=${charset}` },
      });
      expect([charset, res.status]).toEqual([charset, 201]);
    }
  });

  test('bytes that are not UTF-8 are a 400 malformed-body, not stored as U+FFFD', async () => {
    const before = api.resources.list('users').length;
    const bad = Buffer.concat([Buffer.from('{"name":"bad'), Buffer.from([0xff, 0xfe]), Buffer.from('utf"}')]);
    const res = await api.app.inject({
      method: 'POST',
      url: '/users',
      headers: { ...bearer(), 'content-type': 'application/json' },
      payload: bad,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().type).toBe(problemType('malformed-body'));
    expect(res.json().detail).toMatch(/UTF-8/);
    expect(api.resources.list('users').length).toBe(before);
    const ok = await call(api.app, '/users', {
      raw: '{"name":"Zoë ✓ 😀"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe('Zoë ✓ 😀');
  });

  test('a lone surrogate escape is a 400 malformed-body naming where; a paired one is text', async () => {
    for (const [raw, at] of [
      ['{"name":"lone\\ud800x"}', '/name'],
      ['{"name":"tail\\uDC00"}', '/name'],
      ['{"name":"x","tags":["ok","\\udfff"]}', '/tags/1'],
      ['{"name":"x","\\ud83d":1}', '/\\ud83d'],
    ]) {
      const res = await call(api.app, '/users', { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(problemType('malformed-body'));
      expect(res.body.detail).toContain(`"${at}"`);
    }
    const pair = await call(api.app, '/users', {
      raw: '{"name":"pair\\ud83d\\ude00"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(pair.status).toBe(201);
    expect(pair.body.name).toBe('pair😀');
  });

  test('a compressed body is 415, not malformed JSON; identity is a body as sent', async () => {
    const gz = await api.app.inject({
      method: 'POST',
      url: '/orders',
      headers: {
        ...bearer(),
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      payload: gzipSync(JSON.stringify(order)),
    });
    expect(gz.statusCode).toBe(415);
    expect(gz.json().type).toBe(problemType('unsupported-media-type'));
    const identity = await call(api.app, '/orders', { body: order, headers: { 'content-encoding': 'identity' } });
    expect(identity.status).toBe(201);
  });
});

describe('path segments', () => {
  test('a segment longer than any id is a 404 like a short unknown id, its detail short', async () => {
    const short = await call(api.app, '/users/nobody');
    const long = await call(api.app, `/users/${'a'.repeat(300)}`);
    for (const res of [short, long]) {
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.type).toBe(problemType('not-found'));
      expect(res.body.logref).toBe(res.headers['x-request-id']);
    }
    expect(long.body.detail.length).toBeLessThan(200);
    expect((await call(api.app, `/tasks/${'t'.repeat(5000)}/events`)).body.detail.length).toBeLessThan(200);
  });

  test('a malformed %-escape is a 400 bad-request whose detail does not echo a long URL', async () => {
    const res = await call(api.app, `/users/%zz${'b'.repeat(150)}`);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(problemType('bad-request'));
    expect(res.body.detail).not.toContain('b'.repeat(100));
  });
});

describe('methods on the docs page files', () => {
  test('a method the files do not take is 405 with Allow, as on every other path', async () => {
    for (const method of ['PUT', 'DELETE'] as const) {
      const res = await call(api.app, '/docs/static/swagger-ui.css', { method, key: null });
      expect(res.status).toBe(405);
      expect(String(res.headers.allow)).toMatch(/GET/);
    }
    const options = await call(api.app, '/docs/static/swagger-ui.css', { method: 'OPTIONS', key: null });
    expect(options.status).toBe(204);
    // A method the files take, for a file that is not there (a browser asking for a .map): 404, not 405.
    const missing = await call(api.app, '/docs/static/swagger-ui-bundle.js.map', { key: null });
    expect(missing.status).toBe(404);
    expect(missing.body.type).toBe(problemType('not-found'));
  });
});

describe('Accept', () => {
  test('the docs page answers an Accept that names only what it serves; the API still answers 406 to it', async () => {
    const yaml = await call(api.app, '/docs/yaml', { key: null, headers: { accept: 'application/x-yaml' } });
    expect(yaml.status).toBe(200);
    for (const accept of ['text/html', 'text/*']) {
      const page = await call(api.app, '/docs', { key: null, headers: { accept } });
      expect([200, 302]).toContain(page.status);
    }
    const api406 = await call(api.app, '/orders', { headers: { accept: 'text/html' } });
    expect(api406.status).toBe(406);
    expect((await call(api.app, '/orders', { headers: { accept: 'application/*' } })).status).toBe(200);
  });
});

describe('Vary', () => {
  test('every negotiated answer varies on Accept, the 406 too; a task also on Prefer', async () => {
    expect((await call(api.app, '/orders')).headers.vary).toBe('Accept');
    expect((await call(api.app, '/orders', { headers: { accept: 'text/csv' } })).headers.vary).toBe('Accept');
    const task = await call(api.app, '/tasks', { body: { type: 'countdown', input: { steps: 1, stepMs: 0 } } });
    expect(task.status).toBe(202);
    expect((await call(api.app, `/tasks/${task.body.taskId}`)).headers.vary).toBe('Accept, Prefer');
  });
});

describe('Accept on routes that answer no HAL JSON', () => {
  test('is weighed against the types they do answer: one refused is 406, one they answer is served', async () => {
    const cases: [string, string, number][] = [
      ['/openapi.json', 'application/json', 200],
      ['/openapi.json', 'application/hal+json', 406],
      ['/openapi.json', 'application/json;q=0, application/hal+json', 406],
      ['/openapi.json', 'application/hal+json;q=0, application/json', 200],
      ['/docs', 'application/hal+json', 406],
      ['/docs/json', 'application/json', 200],
      ['/docs/json', 'application/hal+json', 406],
      // Each docs route on its own types, not the whole page's: the page is no PNG, nor is the document HTML.
      ['/docs', 'image/png', 406],
      ['/docs', 'text/html;q=0, application/json', 406],
      ['/docs/json', 'text/html', 406],
      ['/docs/static/swagger-initializer.js', 'text/javascript', 200],
    ];
    for (const [url, accept, status] of cases) {
      const res = await call(api.app, url, { key: null, headers: { accept } });
      expect([url, accept, res.status]).toEqual([url, accept, status]);
      if (status === 406) expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
  });

  test('/metrics serves what Prometheus asks for, and refuses a client that takes HAL JSON only', async () => {
    const { app } = await inMemoryApi({ metrics: new Metrics(() => []) });
    try {
      const prometheus =
        'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,' +
        'text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
      const scrape = await call(app, '/metrics', { key: null, headers: { accept: prometheus } });
      expect([scrape.status, scrape.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/plain/)]);
      const hal = await call(app, '/metrics', { key: null, headers: { accept: 'application/hal+json' } });
      expect(hal.status).toBe(406);
    } finally {
      await app.close();
    }
  });
});

describe('raw HTTP the framework would answer with an empty body', () => {
  let port: number;
  beforeAll(async () => {
    port = Number(new URL(await api.app.listen({ port: 0, host: '127.0.0.1' })).port);
  });

  /** One raw request on a fresh connection; the whole answer, once the server closes it. */
  function raw(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(request));
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
    });
  }

  test('HTTP/1.1 without Host is a 400 Problem with a request id; HTTP/1.0 needs none', async () => {
    const missing = await raw('GET / HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(missing).toMatch(/^HTTP\/1\.1 400 /);
    expect(missing).toMatch(/content-type: application\/problem\+json/i);
    expect(missing).toMatch(/x-request-id: /i);
    expect(missing).toContain('must carry a Host header');
    expect(await raw('GET / HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.[01] 200 /);
    // Empty is allowed (a target with no authority); only a missing Host is refused.
    expect(await raw('GET / HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });

  test('an HTTP version other than 1.x is a 505 Problem (Node would serve HTTP/2.0 as HTTP/1)', async () => {
    // Node's parser reads 2.0 and 0.9 and refuses the others itself (HPE_INVALID_VERSION): each is a 505 all the same.
    for (const version of ['HTTP/2.0', 'HTTP/0.9', 'HTTP/1.2', 'HTTP/3.0', 'HTTP/1.10', 'HTTP/10.0']) {
      const answer = await raw(`GET / ${version}\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 505 /);
      expect(answer).toContain(problemType('http-version-not-supported'));
    }
    expect(await raw('GET /orders HTTP/3.0\r\nHost: x\r\n\r\n')).toContain('"instance":"/orders"');
    // A version that is no HTTP/<digits>.<digits> makes a malformed request line, not one the server does not speak.
    expect(await raw('GET / HTTP/1.1x\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
  });

  test('the asterisk-form target (*) is for OPTIONS only: OPTIONS * is 204 with Allow, GET * a 400 Problem', async () => {
    // RFC 9112 §3.2.4: "*" names the server as a whole, and only OPTIONS may use it (RFC 9110 §9.3.7).
    const options = await raw('OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(options).toMatch(/^HTTP\/1\.1 204 /);
    expect(/\r\nallow: ([^\r]+)/i.exec(options)?.[1].split(', ')).toEqual(
      expect.arrayContaining(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']),
    );
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
      const answer = await raw(`${method} * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      if (method !== 'HEAD') expect(answer).toContain(problemType('bad-request'));
    }
  });

  test("a path out of the docs page's files is a 404 Problem, not a 403 typed as a 400", async () => {
    const answer = await raw('GET /docs/static/../../package.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
    expect(answer).toContain(problemType('not-found'));
  });

  test('a URL past the header limit is a 431 Problem; an unparsable request a 400; both with a logref', async () => {
    const long = await raw(`GET /orders?x=${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(long).toMatch(/^HTTP\/1\.1 431 /);
    expect(long).toContain(problemType('headers-too-large'));
    const garbled = await raw('GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
    expect(garbled).toMatch(/^HTTP\/1\.1 400 /);
    for (const answer of [long, garbled]) {
      const id = /x-request-id: (\S+)/i.exec(answer)?.[1];
      expect(id).toBeDefined();
      expect(answer).toContain(`"logref":"${id}"`);
    }
  });

  test('CONNECT is answered like any unsupported method: a 405 Problem with Allow, then the connection closes', async () => {
    const tunnel = await raw('CONNECT localhost:80 HTTP/1.1\r\nHost: localhost:80\r\n\r\n');
    expect(tunnel).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
    expect(tunnel).toMatch(/\r\nallow: \r\n/i);
    expect(tunnel).toMatch(/content-type: application\/problem\+json/i);
    const id = /x-request-id: (\S+)/i.exec(tunnel)?.[1];
    const body = JSON.parse(tunnel.split('\r\n\r\n')[1]);
    expect(body).toMatchObject({ type: problemType('method-not-allowed'), status: 405, logref: id });
    const onPath = await raw('CONNECT /orders HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(onPath).toMatch(/^HTTP\/1\.1 405 /);
    expect(onPath).toMatch(/\r\nallow: GET, HEAD, OPTIONS, PATCH, POST\r\n/i);
    expect(onPath).toContain('"instance":"/orders"');
    expect(await raw('CONNECT /nowhere HTTP/1.1\r\nHost: x\r\n\r\n')).toMatch(/^HTTP\/1\.1 404 /);
  });

  test('an Expect other than 100-continue is a 417 Problem naming the path', async () => {
    const answer = await raw('GET /orders?limit=1 HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 417 /);
    expect(answer).toMatch(/content-type: application\/problem\+json; charset=utf-8\r\n/i);
    expect(answer).toContain(problemType('expectation-failed'));
    expect(answer).toContain('"instance":"/orders"');
  });
});

describe('headers that say two things', () => {
  test('two Content-Type headers are a 400, whichever comes first; nothing is written', async () => {
    const before = api.resources.list('users').length;
    // inject cannot repeat a header: a real socket can.
    if (!api.app.server.listening) await api.app.listen({ port: 0, host: '127.0.0.1' });
    for (const types of [
      ['application/json', 'text/plain'],
      ['text/plain', 'application/json'],
    ]) {
      const res = await new Promise<string>((resolve, reject) => {
        const address = api.app.server.address() as { port: number } | null;
        if (!address) return reject(new Error('not listening'));
        const body = '{"name":"x"}';
        const socket = connect(address.port, '127.0.0.1', () =>
          socket.write(
            `POST /users HTTP/1.1\r\nHost: x\r\nAuthorization: ${bearer().authorization}\r\n` +
              `Content-Type: ${types[0]}\r\nContent-Type: ${types[1]}\r\nContent-Length: ${body.length}\r\n` +
              `Connection: close\r\n\r\n${body}`,
          ),
        );
        let text = '';
        socket.on('data', (d) => (text += d.toString()));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
      expect(res).toMatch(/^HTTP\/1\.1 400 /);
      expect(res).toContain('more than one Content-Type');
    }
    expect(api.resources.list('users').length).toBe(before);
  });

  test('a Content-Type with no body is no reason to refuse: a DELETE sent with text/plain and nothing is served', async () => {
    const id = await createOrder();
    const res = await api.app.inject({
      method: 'DELETE',
      url: `/orders/${id}`,
      headers: { ...bearer(), 'content-type': 'text/plain;charset=UTF-8', 'content-length': '0' },
      payload: '',
    });
    expect(res.statusCode).toBe(204);
    // With a body, the type still counts.
    const posted = await api.app.inject({
      method: 'POST',
      url: '/orders',
      headers: { ...bearer(), 'content-type': 'text/plain' },
      payload: JSON.stringify(order),
    });
    expect(posted.statusCode).toBe(415);
  });

  test.each(['a b', 'a/b?c', '[::1', 'user@host', 'a\\b'])('Host %j is a 400', async (host) => {
    const res = await api.app.inject({ method: 'GET', url: '/', headers: { host } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: problemType('bad-request'), detail: expect.stringMatching(/Host/) });
  });

  test.each([
    'example.com',
    'example.com:8080',
    'Example.COM.',
    '127.0.0.1:3000',
    '[::1]:3000',
    '[fe80::1%25eth0]:8080',
    '[v1.fe]',
    'xn--bcher-kva.example',
    '',
  ])('Host %j is served', async (host) => {
    const res = await api.app.inject({ method: 'GET', url: '/', headers: { host } });
    expect(res.statusCode).toBe(200);
  });
});

test('a Problem names the path as a URI reference: what is no part of one is percent-encoded, escapes are kept', async () => {
  const res = await api.app.inject({ method: 'GET', url: '/tasks/<script>"x%41', headers: bearer() });
  expect(res.statusCode).toBe(404);
  expect(res.json().instance).toBe('/tasks/%3Cscript%3E%22x%41');
});

test('instanceUri encodes a % that escapes nothing and a character outside the BMP whole, and never throws', () => {
  expect(instanceUri('/tasks/%zz/%41')).toBe('/tasks/%25zz/%41');
  expect(instanceUri('/tasks/\u{1F600}')).toBe('/tasks/%F0%9F%98%80');
  expect(instanceUri('/tasks/\ud800x')).toBe('/tasks/%EF%BF%BDx');
});
