import type { Logger } from '../logger';

export interface PeriodicSweepOptions {
  intervalMs: number;
  /** one pass; a failed pass is logged and the next interval tries again */
  sweep: () => Promise<unknown>;
  logger: Logger;
  /** logged with the error of a failed pass */
  failure: string;
}

/** Stops the sweeping: no pass starts after it (one under way finishes). */
export type StopSweeping = () => void;

/**
 * Runs a sweep every interval, the first after a random part of one, so several instances rarely sweep the same
 * state at once. The next pass is scheduled when one ends, never beside it: a pass slower than the interval (a
 * broker down for a while) does not pile up writes. The timer never keeps the process alive.
 */
export function startPeriodicSweep(options: PeriodicSweepOptions): StopSweeping {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      // Through a promise, so a sweep that throws at once is logged like one that rejects, and the next is kept.
      Promise.resolve()
        .then(options.sweep)
        .catch((err: unknown) => options.logger.warn({ err }, options.failure))
        .finally(() => schedule(options.intervalMs));
    }, delayMs);
    timer.unref();
  };
  schedule(Math.random() * options.intervalMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
