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
 */
export class CallbackFailureLog {
  private readonly windows = new Map<Kind, { count: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly logger: Logger,
    private readonly windowMs = FAILURE_LOG_WINDOW_MS,
  ) {}

  tell(kind: Kind, fields: Record<string, unknown>): void {
    const { level, msg, more } = TOLD[kind];
    const open = this.windows.get(kind);
    if (open) {
      open.count += 1;
      this.logger.debug(fields, msg);
      return;
    }
    this.logger[level](fields, msg);
    const window = {
      count: 0,
      timer: setTimeout(() => {
        this.windows.delete(kind);
        if (window.count > 0) this.logger[level]({ more: window.count, windowMs: this.windowMs }, more);
      }, this.windowMs),
    };
    window.timer.unref();
    this.windows.set(kind, window);
  }
}
