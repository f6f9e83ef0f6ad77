import type { Logger } from '../logger';

/** What a kafkajs consumer reports when its run loop dies. */
export interface CrashSource {
  events: { CRASH: string };
  on(event: string, listener: (e: { payload: { error: Error; groupId: string; restart: boolean } }) => void): unknown;
}

/**
 * kafkajs restarts a crashed consumer only when it deems the cause retriable;
 * after any other crash the consumer stays stopped for good, and a view or a
 * consumer group would silently stop making progress. This calls `recover`
 * (which starts a fresh consumer) for exactly those crashes, after `delayMs`.
 * Every crash is logged at warn, since kafkajs's own error lines are demoted.
 */
export function recoverFromFatalCrash(
  consumer: CrashSource,
  logger: Logger,
  what: string,
  recover: () => void,
  delayMs = 1000,
): void {
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    // Worded for what follows: on a broker outage this comes once per consumer and reconnect, and "crashed" read as
    // a fault of the service.
    const next = payload.restart ? 'kafkajs restarts it' : `a fresh one starts in ${delayMs} ms`;
    logger.warn(
      { groupId: payload.groupId, err: payload.error, restartedByClient: payload.restart },
      `${what} consumer stopped on an error (${payload.error?.name ?? 'unknown'}); ${next}`,
    );
    if (payload.restart) return;
    setTimeout(recover, delayMs).unref();
  });
}
