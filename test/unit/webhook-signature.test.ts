import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newSecret, webhookHeaders, webhookSignature } from '../../src/subscriptions/webhook-signature';

describe('Standard Webhooks signature', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const body = '{"event":"task.succeeded","UUID":"s-1"}';

  test('v1 is the base64 HMAC-SHA256 of id.timestamp.body under the decoded secret', () => {
    const headers = webhookHeaders(secret, 'msg_1', 1_700_000_000, body);
    const key = Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64');
    const expected = createHmac('sha256', key).update(`msg_1.1700000000.${body}`).digest('base64');
    expect(headers).toEqual({
      'webhook-id': 'msg_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': `v1,${expected}`,
    });
  });

  test('a body given as the bytes that are sent is signed as the same body given as a string', () => {
    const unicode = '{"event":"order.created","data":{"name":"Zoë ✓"}}';
    for (const b of [body, unicode]) {
      expect(webhookSignature(secret, 'msg_1', 1_700_000_000, Buffer.from(b))).toBe(
        webhookHeaders(secret, 'msg_1', 1_700_000_000, b)['webhook-signature'],
      );
    }
  });

  test('the reference library verifies it, and refuses a changed body, id or timestamp', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders(secret, 'msg_2', now, body);
    const verifier = new Webhook(secret);
    expect(verifier.verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => verifier.verify(body.replace('s-1', 's-2'), headers)).toThrow();
    expect(() => verifier.verify(body, { ...headers, 'webhook-id': 'msg_3' })).toThrow();
    expect(() => verifier.verify(body, { ...headers, 'webhook-timestamp': String(now - 1) })).toThrow();
  });

  test('a new secret is whsec_ and 24 random bytes, different each time', () => {
    const a = newSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(24);
    expect(newSecret()).not.toBe(a);
  });
});
