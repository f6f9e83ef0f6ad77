import { retryDelayMs } from '../../src/lib/backoff';

describe('internal retry backoff (no jitter)', () => {
  test('base, then doubling per failure, capped at max', () => {
    expect([1, 2, 3, 4, 5].map((f) => retryDelayMs(f, 100, 1000))).toEqual([100, 200, 400, 800, 1000]);
  });

  test('no failure yet waits the base; a huge count stays at the cap instead of overflowing', () => {
    expect(retryDelayMs(0, 100, 1000)).toBe(100);
    expect(retryDelayMs(-3, 100, 1000)).toBe(100);
    expect(retryDelayMs(10_000, 100, 1000)).toBe(1000);
    expect(Number.isFinite(retryDelayMs(10_000, 100, Infinity))).toBe(true);
  });
});
