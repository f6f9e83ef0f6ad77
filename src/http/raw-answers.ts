import { METHODS } from 'node:http';
import { loggableUrl, type Logger } from '../logger';
import type { Metrics } from '../metrics/metrics';

/** What an answer written outside Fastify says of itself, for its log line and its metric. */
export interface RawAnswer {
  reqId: string;
  /** the request's method, as far as it was read (none: the request line could not be read) */
  method?: string;
  /** the request's target, as far as it was read */
  url?: string;
  statusCode: number;
  /**
   * `performance.now()` when the answer was begun: these answers are timed from there, for Node keeps no start of the
   * request (a 408's wait for the request is not in its time)
   */
  since: number;
  /** why it was refused, when that is an error (the parser's) */
  err?: Error;
  /** more that says why (an `Expect` header's value) */
  detail?: Record<string, unknown>;
}

/**
 * Answers that never pass Fastify's hooks (a request Node's parser refused, an `Expect` answered before the body, a
 * CONNECT, a path the router refused): each gets the one `request completed` line and the
 * `http_request_duration_seconds` observation every other answer gets (README "Logging" and "Metrics": every
 * response of the process), under the route `unmatched`.
 */
export interface RawAnswers {
  readonly logger: Logger;
  answered(answer: RawAnswer): void;
}

const KNOWN_METHODS = new Set(METHODS);

export function rawAnswers(logger: Logger, metrics?: Metrics): RawAnswers {
  return {
    logger,
    answered({ reqId, method, url, statusCode, since, err, detail }) {
      const responseTime = performance.now() - since;
      const req = { method, url: url === undefined ? undefined : loggableUrl(url) };
      logger.info({ reqId, req, res: { statusCode }, responseTime, err, ...detail }, 'request completed');
      // The method as a label only when it is one Node knows: a client's made-up ones would grow the series.
      const label = method !== undefined && KNOWN_METHODS.has(method) ? method : 'OTHER';
      metrics?.httpRequest(label, 'unmatched', statusCode, responseTime / 1000);
    },
  };
}
