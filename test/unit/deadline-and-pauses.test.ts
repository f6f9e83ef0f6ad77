import { pause, sleep, waitAtLeast } from '../../src/lib/abortable-sleep';
import { Deadline } from '../../src/lib/deadline';

describe('Deadline', () => {
  test('each phase gets what is left, and at least 1 ms once it has passed', () => {
    const now = Date.now();
    expect(new Deadline(5000, now).remaining()).toBeGreaterThan(4000);
    expect(new Deadline(5000, now - 4000).remaining()).toBeLessThanOrEqual(1000);
    expect(new Deadline(10, now - 60000).remaining()).toBe(1);
  });
});

describe('abortable pauses', () => {
  test("sleep rejects with the signal's reason as soon as it aborts, and at once when already aborted", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const sleeping = sleep(60000, controller.signal);
    controller.abort(new Error('shutting down'));
    await expect(sleeping).rejects.toThrow('shutting down');
    expect(performance.now() - started).toBeLessThan(1000);
    await expect(sleep(10, controller.signal)).rejects.toThrow('shutting down');
  });

  test('pause never rejects: it ends early on abort', async () => {
    const controller = new AbortController();
    const pausing = pause(60000, controller.signal);
    controller.abort();
    await expect(pausing).resolves.toBeUndefined();
    await expect(pause(-5, new AbortController().signal)).resolves.toBeUndefined();
  });

  test('waitAtLeast never ends before its time by the monotonic clock', async () => {
    for (const ms of [1, 15, 40]) {
      const started = performance.now();
      await waitAtLeast(ms);
      expect(performance.now() - started).toBeGreaterThanOrEqual(ms);
    }
  });
});
