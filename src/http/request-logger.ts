import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type LogMethod = (...args: unknown[]) => void;

/**
 * A request's logger, made on first use. Fastify makes a child logger per request (bound to its `reqId`), and pino
 * builds each child's log methods anew: every request paid for that, while at `warn` and above most requests log
 * nothing. Until something is logged at an enabled level (or asked of it), this holds only the parent and the
 * bindings; from then on, the child pino would have made answers for it.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private made?: FastifyBaseLogger;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  private log(level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    const logger = this.real();
    (logger[level] as LogMethod).apply(logger, args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }

  error(...args: unknown[]): void {
    this.log('error', args);
  }

  warn(...args: unknown[]): void {
    this.log('warn', args);
  }

  info(...args: unknown[]): void {
    this.log('info', args);
  }

  debug(...args: unknown[]): void {
    this.log('debug', args);
  }

  trace(...args: unknown[]): void {
    this.log('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
}

/**
 * Fastify's childLoggerFactory. The options are a route's own `logLevel` and `logSerializers`, the only ones Fastify
 * passes: such a route gets pino's child at once, as before.
 */
export function requestLoggerFactory(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
  return new LazyRequestLogger(logger as Logger, bindings);
}

/**
 * One log line per request, once it is answered: method, URL (query values redacted, logger.ts), status and time.
 * Fastify's own logging wrote two (`incoming request`, then `request completed`), which in an outage was most of the
 * log. Its other lines (a request errored, a reply that failed to serialize) stay as Fastify writes them. At the
 * route's log level: probes and scrapes, which log at warn, write none.
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { req: request, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}
