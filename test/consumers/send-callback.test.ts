import { backoffMs, retryAfterMs } from '../../consumers/callback-bridge/send-callback';

describe('retry timing', () => {
  test('Retry-After is read as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120000);
    expect(retryAfterMs('Sat, 21 Nov 2026 10:00:30 GMT', now)).toBe(30000);
    expect(retryAfterMs('Sat, 21 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
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
