/*
 * kafkajs's failures told apart by name: its error classes are plain names on the error objects, and what it wraps
 * (KafkaJSNumberOfRetriesExceeded) is in `cause` or `originalError`.
 */

/** kafkajs's plain Error for a connection whose handshake (ApiVersions) never finished: a stalled broker. */
export const HALF_CONNECTED = 'Broker not connected';

const CONNECTION_FAILURES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
]);

/** Errors from node's own modules may come from another realm (jest), where instanceof Error fails. */
function isErrorLike(x: unknown): x is Error & { originalError?: unknown } {
  const e = x as Error | null;
  return typeof x === 'object' && e !== null && typeof e.message === 'string' && typeof e.name === 'string';
}

/** The error, then what it wraps (`cause`, kafkajs's `originalError`), at most five deep. */
export function* causes(err: unknown): Generator<Error> {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && isErrorLike(current); depth++) {
    yield current;
    current = current.cause ?? current.originalError;
  }
}

/** The connection itself failed (refused, closed, timed out, left half made): a new one is what can help. */
export function isConnectionFailure(err: unknown): boolean {
  for (const e of causes(err)) if (CONNECTION_FAILURES.has(e.name) || e.message === HALF_CONNECTED) return true;
  return false;
}

/** Any failure of kafkajs's, as against a bug of ours (a TypeError) that must stay a 500. */
export function isKafkaFailure(err: unknown): boolean {
  for (const e of causes(err)) if (e.name.startsWith('KafkaJS') || e.message === HALF_CONNECTED) return true;
  return false;
}
