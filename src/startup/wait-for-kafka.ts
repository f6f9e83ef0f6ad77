import { retryDelayMs } from '../lib/backoff';
import type { Logger } from '../logger';
import { isKafkaNotReady } from './kafka-not-ready';

export interface WaitForKafkaOptions<T> {
  /** named in the progress lines and the final message */
  brokers: string[];
  /** give up after this long (KAFKA_STARTUP_TIMEOUT_MS) */
  timeoutMs: number;
  /** a shutdown signal: stop waiting at once */
  signal: AbortSignal;
  /** receives one line for a person at a time */
  progress(line: string): void;
  logger: Logger;
  /**
   * A cheap check before each attempt: an error when no broker accepts a connection. It spares an
   * attempt that cannot succeed (a client, its retries, its timers) and names the cause at once.
   */
  precheck?(): Promise<Error | undefined>;
  /** stops what an attempt started when it succeeded after waiting had already ended */
  discard?(value: T): Promise<void> | void;
  firstDelayMs?: number;
  maxDelayMs?: number;
  progressEveryMs?: number;
}

export class KafkaStartupTimeoutError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'KafkaStartupTimeoutError';
  }
}

/** Waiting ended because the process is shutting down; not a failure. */
export class StartupAbortedError extends Error {
  constructor() {
    super('start-up stopped by a signal');
    this.name = 'StartupAbortedError';
  }
}

function describe(err: unknown): string {
  // Duck-typed: errors from node's own modules may come from another realm (jest), failing instanceof.
  const message = (err as { message?: unknown } | undefined)?.message;
  const text = typeof message === 'string' ? message : String(err);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/**
 * Runs `attempt` until it succeeds, retrying only while its error means that
 * Kafka is not usable yet (see isKafkaNotReady), with backoff (0.5 s doubling
 * to 5 s). A failed attempt must clean up after itself. Progress lines come
 * from a timer, not from attempts: one attempt can itself wait a long time
 * (a view catching up). At the limit, or on abort, it rejects at once; an
 * attempt still in flight is left to finish and, if it succeeds, discarded.
 */
export async function waitForKafka<T>(attempt: () => Promise<T>, options: WaitForKafkaOptions<T>): Promise<T> {
  const { brokers, timeoutMs, signal, logger } = options;
  const everyMs = options.progressEveryMs ?? 5000;
  const started = Date.now();
  let lastError: unknown;
  let lastPrinted = started;
  // An attempt in flight after the precheck reached a broker: the wait is most often the attempt's own (a group
  // that keeps a dead member until its session ends, a view catching up), not Kafka's absence. A stalled broker
  // also takes connections; between its failed attempts the line is the waiting one, with their error.
  let answering = false;
  const print = () => {
    lastPrinted = Date.now();
    const seconds = Math.round((lastPrinted - started) / 1000);
    const at = brokers.join(',');
    // An error from before the broker took connections would mislead next to "accepts connections".
    const last = lastError === undefined || answering ? '' : `; last error: ${describe(lastError)}`;
    options.progress(
      answering
        ? `Kafka at ${at} accepts connections; still starting on it (${seconds} s so far)`
        : `waiting for Kafka at ${at} (${seconds} s so far${last})`,
    );
  };

  let end: (err: Error) => void = () => undefined;
  const ended = new Promise<never>((_, reject) => {
    end = reject;
  });
  const onAbort = () => end(new StartupAbortedError());
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  const deadline = setTimeout(
    () =>
      end(
        new KafkaStartupTimeoutError(
          `gave up waiting for Kafka at ${brokers.join(',')} after ${Math.round(timeoutMs / 1000)} s ` +
            `(KAFKA_STARTUP_TIMEOUT_MS=${timeoutMs}); last error: ` +
            `${lastError === undefined ? 'none, the first attempt had not ended' : describe(lastError)}`,
          lastError,
        ),
      ),
    timeoutMs,
  );
  ended.catch(() => undefined);
  const ticker = setInterval(
    () => {
      if (Date.now() - lastPrinted >= everyMs) print();
    },
    Math.min(1000, everyMs),
  );

  const notReady = (err: unknown, failures: number): undefined => {
    const first = lastError === undefined;
    lastError = err;
    if (first) print();
    logger.debug({ err, failures }, 'Kafka is not usable yet');
    return undefined;
  };
  /** One try: the value, or undefined when Kafka is not usable yet; throws anything else. */
  const tryOnce = async (failures: number): Promise<{ value: T } | undefined> => {
    const unreachable = options.precheck ? await Promise.race([options.precheck(), ended]) : undefined;
    if (unreachable) return notReady(unreachable, failures);
    answering = options.precheck !== undefined;
    const run = attempt();
    try {
      return { value: await Promise.race([run, ended]) };
    } catch (err) {
      answering = false;
      if (err instanceof KafkaStartupTimeoutError || err instanceof StartupAbortedError) {
        run.then(
          (value) =>
            Promise.resolve(options.discard?.(value)).catch((e: unknown) =>
              logger.warn({ err: e }, 'could not stop a start-up attempt that ended late'),
            ),
          () => undefined,
        );
        throw err;
      }
      if (!isKafkaNotReady(err)) throw err;
      return notReady(err, failures);
    }
  };

  try {
    for (let failures = 1; ; failures++) {
      const outcome = await tryOnce(failures);
      if (outcome) {
        if (failures > 1) logger.info({ brokers, waitedMs: Date.now() - started }, 'Kafka is usable');
        return outcome.value;
      }
      const delay = retryDelayMs(failures, options.firstDelayMs ?? 500, options.maxDelayMs ?? 5000);
      let pause: NodeJS.Timeout | undefined;
      const paused = new Promise((r) => {
        pause = setTimeout(r, delay);
      });
      await Promise.race([paused, ended]).finally(() => clearTimeout(pause));
    }
  } finally {
    clearInterval(ticker);
    clearTimeout(deadline);
    signal.removeEventListener('abort', onAbort);
  }
}
