import { startPeriodicSweep } from '../../src/lib/periodic-sweep';
import { capturedLogger } from './fakes';

describe('periodic sweep', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('a sweep that throws at once is logged with its stack, and the next one still runs', async () => {
    const { logger, lines } = capturedLogger();
    let calls = 0;
    const stop = startPeriodicSweep({
      intervalMs: 1000,
      logger,
      failure: 'sweep failed',
      sweep: () => {
        calls += 1;
        if (calls === 1) throw new Error('at once');
        return Promise.resolve();
      },
    });
    await jest.advanceTimersByTimeAsync(2000);
    expect(calls).toBe(2);
    expect(lines).toMatchObject([{ msg: 'sweep failed', err: { message: 'at once', stack: expect.any(String) } }]);
    stop();
    expect(jest.getTimerCount()).toBe(0);
  });

  test('a slow sweep is never run beside itself: the next waits for it to end', async () => {
    const { logger } = capturedLogger();
    let running = 0;
    let most = 0;
    const stop = startPeriodicSweep({
      intervalMs: 100,
      logger,
      failure: 'sweep failed',
      sweep: async () => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((r) => setTimeout(r, 350));
        running -= 1;
      },
    });
    await jest.advanceTimersByTimeAsync(2000);
    expect(most).toBe(1);
    stop();
  });
});
