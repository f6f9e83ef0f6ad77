import { Webhook } from 'standardwebhooks';
import { MockAgent, type Agent } from 'undici';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createCallbackAgent, sendCallback, type CallbackMessage } from '../../consumers/callback-bridge/send-callback';
import { newSecret } from '../../src/subscriptions/webhook-signature';

/*
 * How one callback POST goes out and how its answer is classified, against undici's MockAgent: no socket, and
 * disableNetConnect makes any request that no interceptor takes fail instead of leaving the machine.
 */
const ORIGIN = 'https://receiver.test';
let agent: MockAgent;
beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
});
afterEach(() => agent.close());

const secret = newSecret();
const message = (over: Partial<CallbackMessage> = {}): CallbackMessage => ({
  subscriptionId: 'sub-1',
  callbackUrl: `${ORIGIN}/hooks/a?tenant=1`,
  secret,
  webhookId: 'msg_2f1',
  event: 'task.succeeded',
  taskId: 'task-1',
  body: JSON.stringify({ UUID: 'sub-1', event: 'task.succeeded', data: { result: 1 } }),
  ...over,
});

/** sendCallback takes the bridge's Agent; a MockAgent is a Dispatcher like it, and a dispatcher is all it uses. */
const send = (m: CallbackMessage, timeoutMs = 2000) => sendCallback(m, agent as unknown as Agent, timeoutMs);

interface Seen {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** Answers the next POST to the receiver with `statusCode`, recording what was sent. */
function receiverAnswers(statusCode: number, headers: Record<string, string> = {}): Seen[] {
  const seen: Seen[] = [];
  agent
    .get(ORIGIN)
    .intercept({ path: /.*/, method: 'POST' })
    .reply((opts) => {
      seen.push({
        path: opts.path,
        method: opts.method,
        headers: opts.headers as Record<string, string>,
        body: String(opts.body),
      });
      return { statusCode, data: '', responseOptions: { headers } };
    });
  return seen;
}

describe('the callback request', () => {
  test('POSTs the body as JSON to exactly the registered URL, signed as Standard Webhooks verify it', async () => {
    const seen = receiverAnswers(204);
    const m = message({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    expect(await send(m)).toMatchObject({ outcome: 'delivered', statusCode: 204 });
    expect(seen).toHaveLength(1);
    const [request] = seen;
    expect(request).toMatchObject({ method: 'POST', path: '/hooks/a?tenant=1', body: m.body });
    expect(request.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'msg_2f1',
      traceparent: m.traceparent,
      'webhook-timestamp': expect.stringMatching(/^\d+$/),
      'webhook-signature': expect.stringMatching(/^v1,/),
    });
    expect(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(new Webhook(secret).verify(request.body, request.headers)).toEqual(JSON.parse(m.body));
  });

  test("another secret does not verify: the signature is the subscription's own", async () => {
    const seen = receiverAnswers(200);
    await send(message());
    expect(() => new Webhook(newSecret()).verify(seen[0].body, seen[0].headers)).toThrow();
  });

  test("a changed URL or secret is used at once, also past the bridge's cache of parsed URLs and keys", async () => {
    // 1,001 distinct URLs and secrets: the caches are cleared on the way, and each callback still goes to its own
    // URL, signed with its own secret.
    const seen = receiverAnswers(204);
    agent.get(ORIGIN).intercept({ path: /.*/, method: 'POST' }).reply(204).times(1000);
    const sent = Array.from({ length: 1001 }, (_, i) =>
      message({ callbackUrl: `${ORIGIN}/hooks/${i}`, secret: newSecret() }),
    );
    for (const m of sent) expect(await send(m)).toMatchObject({ outcome: 'delivered' });
    const again = receiverAnswers(204);
    const last = message({ callbackUrl: `${ORIGIN}/hooks/0?again=1`, secret: sent[0].secret });
    await send(last);
    expect(seen[0].path).toBe('/hooks/0');
    expect(again[0].path).toBe('/hooks/0?again=1');
    expect(new Webhook(sent[0].secret).verify(again[0].body, again[0].headers)).toEqual(JSON.parse(last.body));
    expect(() => new Webhook(sent[1000].secret).verify(again[0].body, again[0].headers)).toThrow();
  });

  test('a callback URL that does not parse is a failed attempt, also when sent again', async () => {
    for (let i = 0; i < 2; i += 1) {
      expect(await send(message({ callbackUrl: 'not a url' }))).toMatchObject({
        outcome: 'failed',
        error: expect.stringMatching(/^ERR_INVALID_URL/),
      });
    }
  });

  test('a retry carries the same webhook-id, so the receiver can drop the duplicate', async () => {
    const first = receiverAnswers(500);
    const second = receiverAnswers(200);
    await send(message());
    await send(message());
    expect(first[0].headers['webhook-id']).toBe(second[0].headers['webhook-id']);
  });
});

describe('classifying the answer', () => {
  test.each([200, 201, 202, 204, 299])('%i is delivered', async (status) => {
    receiverAnswers(status);
    expect(await send(message())).toMatchObject({ outcome: 'delivered', statusCode: status });
  });

  test('403 is refused (the subscription ends, never retried)', async () => {
    receiverAnswers(403);
    expect(await send(message())).toMatchObject({ outcome: 'refused', statusCode: 403 });
  });

  test('410 is gone (the subscription ends)', async () => {
    receiverAnswers(410);
    expect(await send(message())).toMatchObject({ outcome: 'gone', statusCode: 410 });
  });

  test.each([301, 302, 307, 308])('%i is a failure: the redirect is not followed', async (status) => {
    const seen = receiverAnswers(status, { location: `${ORIGIN}/elsewhere` });
    const elsewhere: string[] = [];
    agent
      .get(ORIGIN)
      .intercept({ path: '/elsewhere', method: 'POST' })
      .reply(() => {
        elsewhere.push('followed');
        return { statusCode: 200, data: '' };
      })
      .persist();
    expect(await send(message())).toMatchObject({ outcome: 'failed', statusCode: status, error: `answered ${status}` });
    expect(seen).toHaveLength(1);
    expect(elsewhere).toEqual([]);
  });

  test.each([400, 404, 429, 500, 502, 503])('%i is a failure to retry', async (status) => {
    receiverAnswers(status);
    const result = await send(message());
    expect(result).toMatchObject({ outcome: 'failed', statusCode: status });
    expect(result.outcome === 'failed' && result.retryAfterMs).toBeUndefined();
  });

  test('Retry-After on a failure is passed on, as seconds or as an HTTP date', async () => {
    receiverAnswers(503, { 'retry-after': '7' });
    expect(await send(message())).toMatchObject({ outcome: 'failed', retryAfterMs: 7000 });
    receiverAnswers(429, { 'retry-after': new Date(Date.now() + 60000).toUTCString() });
    const dated = await send(message());
    expect(dated.outcome === 'failed' && dated.retryAfterMs).toBeGreaterThan(55000);
  });

  test('an answer slower than the timeout is a failure, named as a timeout', async () => {
    // MockAgent hands the abort over only when the delayed reply is due, so how soon the call returns is not asked
    // here (test/subscriptions/callbacks.test.ts holds a real receiver's answer).
    agent.get(ORIGIN).intercept({ path: /.*/, method: 'POST' }).reply(200, '').delay(600);
    const result = await send(message(), 100);
    expect(result).toMatchObject({ outcome: 'failed' });
    expect(result.outcome === 'failed' && result.statusCode).toBeUndefined();
    expect(result.outcome === 'failed' && result.error).toMatch(/timeout|abort/i);
  });

  test('an answer with a long body counts by its status; the body is not read to its end', async () => {
    agent
      .get(ORIGIN)
      .intercept({ path: /.*/, method: 'POST' })
      .reply(200, 'x'.repeat(1024 * 1024));
    expect(await send(message())).toMatchObject({ outcome: 'delivered', statusCode: 200 });
  });

  test('an answer whose body breaks off counts by its status: a 200 is delivered, a 410 gone', async () => {
    // A real loopback receiver: the status and headers go out, then the connection is cut inside the body.
    const server = createServer((req, res) => {
      const status = req.url === '/gone' ? 410 : 200;
      req.resume();
      req.on('end', () => {
        res.writeHead(status, { 'content-length': '100' });
        res.write('x', () => setTimeout(() => res.socket?.destroy(), 20));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const real = createCallbackAgent(true);
    try {
      const at = (path: string) =>
        sendCallback(message({ callbackUrl: `http://127.0.0.1:${port}${path}` }), real, 2000);
      expect(await at('/ok')).toMatchObject({ outcome: 'delivered', statusCode: 200 });
      expect(await at('/gone')).toMatchObject({ outcome: 'gone', statusCode: 410 });
    } finally {
      await real.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a connection error is a failure naming its code', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    agent.get(ORIGIN).intercept({ path: /.*/, method: 'POST' }).replyWithError(refused);
    const result = await send(message());
    expect(result).toMatchObject({ outcome: 'failed' });
    expect(result.outcome === 'failed' && result.error).toMatch(/^ECONNREFUSED: /);
    expect(result.outcome === 'failed' && result.statusCode).toBeUndefined();
  });
});
