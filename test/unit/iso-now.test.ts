import { isoNow } from '../../src/lib/iso-now';

describe('isoNow', () => {
  afterEach(() => jest.useRealTimers());

  test('is the current millisecond as toISOString writes it, and follows the clock', () => {
    jest.useFakeTimers({ now: Date.UTC(2026, 10, 25, 12, 0, 0, 5) });
    expect(isoNow()).toBe('2026-11-25T12:00:00.005Z');
    expect(isoNow()).toBe('2026-11-25T12:00:00.005Z');
    jest.setSystemTime(Date.UTC(2026, 10, 25, 12, 0, 0, 6));
    expect(isoNow()).toBe('2026-11-25T12:00:00.006Z');
    jest.setSystemTime(Date.UTC(2026, 10, 25, 11, 59, 59, 999));
    expect(isoNow()).toBe('2026-11-25T11:59:59.999Z');
  });
});
