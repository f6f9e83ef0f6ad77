import { pause, sleep, waitAtLeast } from '../../src/lib/abortable-sleep';
import { Deadline } from '../../src/lib/deadline';
import { LoopStalls, STALL_MS } from '../../src/lib/loop-stalls';

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

describe('loop stalls', () => {
  /** Blocks the event loop, as a SIGSTOP or a long GC pause does. */
  const block = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // spinning on purpose
    }
  };

  test('a quiet loop has no stall; a blocked one counts at once, and after its heartbeat ran again', async () => {
    const stalls = new LoopStalls().start();
    try {
      // A busy machine may itself stall this process now and then: a quiet stretch is looked for, a few times.
      const quietSince = async () => {
        for (let tries = 0; tries < 10; tries++) {
          const from = performance.now();
          await sleep(200, new AbortController().signal);
          if (!stalls.since(from)) return from;
        }
        return undefined;
      };
      const before = await quietSince();
      expect(before).toBeDefined();
      block(STALL_MS + 300);
      // Right after the stall, before the heartbeat had its turn: the overdue beat tells.
      expect(stalls.since(before as number)).toBe(true);
      await sleep(250, new AbortController().signal);
      // The heartbeat ran and put the stall down: it still counts for a time before it, not for one after it.
      expect(stalls.since(before as number)).toBe(true);
      expect(await quietSince()).toBeDefined();
    } finally {
      stalls.stop();
    }
  });
});
