import type { Logger } from '../../src/logger';

/** How long after a callback failure (or dead letter) is told the same kind is only counted. */
export const FAILURE_LOG_WINDOW_MS = 10000;

type Kind = 'failed' | 'dead-lettered';

const TOLD = {
  failed: { level: 'info', msg: 'callback failed; it is retried', more: 'more callbacks failed' },
  'dead-lettered': {
    level: 'warn',
    msg: 'callback dead-lettered after its last attempt',
    more: 'more callbacks were dead-lettered',
  },
} as const;

/**
 * Callback failures and dead letters as the bridge's log tells them: the first of a kind in a window with what it
 * was about, the rest counted in one line when the window ends. An endpoint that every task calls back, down, fails
 * once per task: a line per task would bury the log just when it is read. Delivery history and metrics keep each one.
 * So do the lanes' Kafka steps retried in place (until-done.ts): in a broker outage every lane retries its step.
 */
export class CallbackFailureLog {
  private readonly windows = new Map<string, { count: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = FAILURE_LOG_WINDOW_MS,
  ) {}

  tell(kind: Kind, fields: Record<string, unknown>): void {
    const { level, msg, more } = TOLD[kind];
    this.windowed(kind, level, fields, msg, more);
  }

  /** A lane's Kafka step that failed and is tried again, e.g. `record the attempt`. */
  tellRetry(what: string, fields: Record<string, unknown>): void {
    this.windowed(`retry ${what}`, 'warn', fields, `could not ${what}; trying again`, `could not ${what}, more times`);
  }

  private windowed(
    key: string,
    level: 'info' | 'warn',
    fields: Record<string, unknown>,
    msg: string,
    more: string,
  ): void {
    const open = this.windows.get(key);
    if (open) {
      open.count += 1;
      this.logger.debug(fields, msg);
      return;
    }
    this.logger[level](fields, msg);
    const window = {
      count: 0,
      timer: setTimeout(() => {
        this.windows.delete(key);
        if (window.count > 0) this.logger[level]({ more: window.count, windowMs: this.windowMs }, more);
      }, this.windowMs),
    };
    window.timer.unref();
    this.windows.set(key, window);
  }
}
