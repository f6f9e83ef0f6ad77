import type { Logger } from '../logger';

/** What a kafkajs consumer reports when its run loop dies. */
export interface CrashSource {
  events: { CRASH: string };
  on(event: string, listener: (e: { payload: { error: Error; groupId: string; restart: boolean } }) => void): unknown;
}

/**
 * A group coordinator that is loading its state or moving: every first start of a broker answers so for seconds
 * (it creates and loads `__consumer_offsets`), and kafkajs restarts the consumer until it does not.
 */
const COORDINATOR_SETTLING = new Set(['COORDINATOR_LOAD_IN_PROGRESS', 'COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR']);

/** A settling coordinator told again within this long is told at warn: it is no longer a start's routine. */
const SETTLING_QUIET_MS = 60000;

/** The protocol error at the bottom of a kafkajs error's causes (a retries-exceeded error wraps the last one). */
function protocolType(error: Error | undefined): string | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string') return type;
  }
  return undefined;
}

/**
 * kafkajs restarts a crashed consumer only when it deems the cause retriable;
 * after any other crash the consumer stays stopped for good, and a view or a
 * consumer group would silently stop making progress. This calls `recover`
 * (which starts a fresh consumer) for exactly those crashes, after `delayMs`.
 * Every crash is logged at warn, since kafkajs's own error lines are demoted, except a first one on a settling
 * coordinator that kafkajs restarts from (debug): README "Start-up" promises a quiet wait while coordinators load.
 */
export function recoverFromFatalCrash(
  consumer: CrashSource,
  logger: Logger,
  what: string,
  recover: () => void,
  delayMs = 1000,
): void {
  let settlingAt = Number.NEGATIVE_INFINITY;
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    // Worded for what follows: on a broker outage this comes once per consumer and reconnect, and "crashed" read as
    // a fault of the service.
    const next = payload.restart ? 'kafkajs restarts it' : `a fresh one starts in ${delayMs} ms`;
    const type = protocolType(payload.error);
    const settling = payload.restart && type !== undefined && COORDINATOR_SETTLING.has(type);
    const level = settling && Date.now() - settlingAt >= SETTLING_QUIET_MS ? 'debug' : 'warn';
    if (settling) settlingAt = Date.now();
    logger[level](
      { groupId: payload.groupId, err: payload.error, restartedByClient: payload.restart, type },
      `${what} consumer stopped on an error (${payload.error?.name ?? 'unknown'}); ${next}`,
    );
    if (payload.restart) return;
    setTimeout(recover, delayMs).unref();
  });
}
