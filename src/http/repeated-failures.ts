import type { FastifyBaseLogger } from 'fastify';

/** How long after a kind of failure is logged with its stack the same kind is only counted. */
export const REPEAT_WINDOW_MS = 10000;

/**
 * Logs the 5xx Problems of requests without flooding: an outage makes every request fail the same way (Kafka down:
 * each 503 logged its 1 KB stack, 4 MB/s under load). The first of a kind in a window is logged with its error and
 * stack at warn; the rest of the window at debug, and counted in one warn line when the window ends. Each request
 * still has its own request log line with its status.
 */
export class RepeatedFailures {
  private readonly windows = new Map<string, { count: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly logger: FastifyBaseLogger,
    private readonly windowMs = REPEAT_WINDOW_MS,
  ) {}

  report(log: FastifyBaseLogger, err: Error, kind: string): void {
    const open = this.windows.get(kind);
    if (open) {
      open.count += 1;
      log.debug({ err, kind }, 'request failed');
      return;
    }
    log.warn({ err, kind }, 'request failed');
    const window = {
      count: 0,
      timer: setTimeout(() => {
        this.windows.delete(kind);
        if (window.count > 0) {
          this.logger.warn({ kind, more: window.count, windowMs: this.windowMs }, 'more requests failed the same way');
        }
      }, this.windowMs),
    };
    window.timer.unref();
    this.windows.set(kind, window);
  }

  /** Ends every window, logging what it counted: nothing counted is left unsaid at shutdown. */
  flush(): void {
    for (const [kind, window] of this.windows) {
      clearTimeout(window.timer);
      if (window.count > 0) {
        this.logger.warn({ kind, more: window.count, windowMs: this.windowMs }, 'more requests failed the same way');
      }
    }
    this.windows.clear();
  }
}
