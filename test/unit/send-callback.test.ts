import {
  backoffMs,
  createCallbackAgent,
  retryAfterMs,
  sendCallback,
} from '../../consumers/callback-bridge/send-callback';
import { Receiver } from '../support/receiver';

describe('retry timing', () => {
  test('Retry-After is read as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120000);
    expect(retryAfterMs('Sat, 21 Nov 2026 10:00:30 GMT', now)).toBe(30000);
    expect(retryAfterMs('Sat, 21 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    // The two obsolete forms RFC 9110 still asks a recipient to read; asctime names no zone and is GMT.
    expect(retryAfterMs('Saturday, 21-Nov-26 10:00:30 GMT', now)).toBe(30000);
    expect(retryAfterMs('Sat Nov 21 10:00:30 2026', now)).toBe(30000);
    // Neither seconds nor a date: no Retry-After, so the backoff stands (Date.parse reads these as dates in 2001).
    for (const odd of ['1.5', '-1', '0x10', '1e3', '+5', 'foo 1', 'now 5', 'abc-1', 'Sun 1'])
      expect(retryAfterMs(odd, now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  test('backoff doubles per attempt with jitter in [d/2, d], capped; Retry-After wins but is capped too', () => {
    expect(backoffMs(1, 1000, 60000, undefined, () => 0)).toBe(500);
    expect(backoffMs(1, 1000, 60000, undefined, () => 1)).toBe(1000);
    expect(backoffMs(4, 1000, 60000, undefined, () => 1)).toBe(8000);
    expect(backoffMs(20, 1000, 60000, undefined, () => 1)).toBe(60000);
    expect(backoffMs(3, 1000, 60000, 2500)).toBe(2500);
    expect(backoffMs(3, 1000, 60000, 10 * 60000)).toBe(60000);
  });
});

describe('the callback agent checks every connection', () => {
  test('a literal internal IP (which skips DNS) is refused at connect time unless private targets are allowed', async () => {
    const receiver = await new Receiver().start();
    const port = new URL(receiver.url).port;
    const message = {
      subscriptionId: 's',
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      webhookId: 'msg_1',
      event: 'e',
      body: '{}',
    };
    const strict = createCallbackAgent(false);
    const lenient = createCallbackAgent(true);
    try {
      for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]']) {
        const refused = await sendCallback({ ...message, callbackUrl: `http://${host}:${port}/hook` }, strict, 2000);
        expect(refused).toMatchObject({ outcome: 'failed' });
        expect(refused.outcome === 'failed' && refused.error).toMatch(/EADDRNOTALLOWED/);
      }
      expect(receiver.received).toHaveLength(0);
      const allowed = await sendCallback({ ...message, callbackUrl: `http://127.0.0.1:${port}/hook` }, lenient, 2000);
      expect(allowed).toMatchObject({ outcome: 'delivered', statusCode: 200 });
      expect(receiver.received).toHaveLength(1);
    } finally {
      await Promise.all([strict.close(), lenient.close(), receiver.stop()]);
    }
  });
});

describe('the callback goes to exactly the URL registered', () => {
  test('its path and query are sent as written, not as the URL parser rewrites them', async () => {
    const receiver = await new Receiver().start();
    const agent = createCallbackAgent(true);
    const message = { subscriptionId: 's', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', event: 'e', body: '{}' };
    const written = [
      ['/hooks/a/../b/{x}|y^%41?q={1}&r=%zz', '/hooks/a/../b/{x}|y^%41?q={1}&r=%zz'],
      ['?only=query', '/?only=query'],
      ['', '/'],
      // An empty query is a query still: the parser keeps its `?`, and so does the callback.
      ['/empty-query?', '/empty-query?'],
      ['/empty-query/a\\b?', '/empty-query/a/b?'],
      ['/with#fragment', '/with'],
      // A backslash goes as the parser reads it, `/`: as written, a receiver might read `/\\host` as another host.
      ['/a\\b', '/a/b'],
      ['/\\evil.example/x', '//evil.example/x'],
      // Non-ASCII cannot go on a request line as it is: the parser's percent-encoding is the one way to send it.
      ['/caf\u00e9', '/caf%C3%A9'],
      // ... and only it: the rest of such a path still goes as written.
      ['/a/../{y}/caf\u00e9?q=\u00fc&r=%zz', '/a/../{y}/caf%C3%A9?q=%C3%BC&r=%zz'],
    ];
    try {
      for (const [i, [path]] of written.entries()) {
        const sent = await sendCallback(
          { ...message, webhookId: `msg_${i}`, callbackUrl: receiver.url + path },
          agent,
          2000,
        );
        expect(sent).toMatchObject({ outcome: 'delivered' });
      }
      expect(receiver.received.map((r) => r.path)).toEqual(written.map(([, arrived]) => arrived));
    } finally {
      await Promise.all([agent.close(), receiver.stop()]);
    }
  });
});
