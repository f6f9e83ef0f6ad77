import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Logger } from '../../src/logger';
import type { CallbackFailureLog } from './callback-failure-log';
import { LaneStopped } from './lane-job';

const DONE = () => undefined;

/** What a lane's Kafka step is, for the warning each failed try logs. */
export interface StepOf {
  logger: Logger;
  subscriptionId: string;
  /** "could not <what>; trying again" */
  what: string;
  /** the bridge's failure log: retries told once a window, not a line each (a line each without it) */
  failures?: Pick<CallbackFailureLog, 'tellRetry'>;
}

/**
 * A Kafka step a lane cannot go on without: retried with backoff until it works or the event is handed back
 * (LaneStopped). `evenIfStopped` tries it once more after the hand-back: an attempt that happened is history.
 * The first try is no async function: every attempt's history record comes through here, and nearly all work.
 */
export function untilDone(
  signal: AbortSignal,
  of: StepOf,
  step: () => Promise<unknown>,
  evenIfStopped = false,
): Promise<void> {
  if (signal.aborted && !evenIfStopped) return Promise.reject(new LaneStopped());
  let first: Promise<unknown>;
  try {
    first = step();
  } catch (err) {
    return retried(signal, of, step, err);
  }
  return first.then(DONE, (err: unknown) => retried(signal, of, step, err));
}

async function retried(signal: AbortSignal, of: StepOf, step: () => Promise<unknown>, err: unknown): Promise<void> {
  for (let failures = 1; ; failures += 1) {
    const retryInMs = retryDelayMs(failures, 100, 5000);
    const fields = { subscriptionId: of.subscriptionId, err, retryInMs };
    if (of.failures) of.failures.tellRetry(of.what, fields);
    else of.logger.warn(fields, `could not ${of.what}; trying again`);
    await pause(retryInMs, signal);
    if (signal.aborted) throw new LaneStopped();
    try {
      await step();
      return;
    } catch (again) {
      err = again;
    }
  }
}
