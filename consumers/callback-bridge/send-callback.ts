import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import { guardedLookup, isInternalAddress } from '../../src/subscriptions/callback-url-policy';
import { webhookHeaders } from '../../src/subscriptions/webhook-signature';

export interface CallbackMessage {
  subscriptionId: string;
  callbackUrl: string;
  secret: string;
  /** stable across retries and redeliveries of the same event to the same subscription */
  webhookId: string;
  event: string;
  taskId?: string;
  body: string;
  /** W3C trace context: the event record's as the lane gets it; the attempt's span as it is sent */
  traceparent?: string;
}

export type CallbackResult =
  | { outcome: 'delivered' | 'refused' | 'gone'; statusCode: number; latencyMs: number }
  | { outcome: 'failed'; statusCode?: number; latencyMs: number; error: string; retryAfterMs?: number };

/** Retry-After as seconds or an HTTP date. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Every connection is checked where it is made: a host name by the guarded
 * DNS lookup, a literal IP (which Node connects to without a lookup) here.
 * So a URL stored before a policy change is judged by today's policy.
 */
export function createCallbackAgent(allowPrivate: boolean): Agent {
  const connector = buildConnector({ lookup: guardedLookup(allowPrivate) as never });
  const connect: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (!allowPrivate && isIP(host) !== 0 && isInternalAddress(host)) {
      callback(Object.assign(new Error(`callback address ${host} is not allowed`), { code: 'EADDRNOTALLOWED' }), null);
      return;
    }
    connector(options, callback);
  };
  return new Agent({ connect, keepAliveTimeout: 10000 });
}

/**
 * POSTs to exactly the registered URL. 2xx is delivered; 403 refused and 410
 * gone (both end the subscription); everything else (3xx, since redirects
 * are not followed; 429; 5xx; timeouts; connection errors) is a failure to retry.
 */
export async function sendCallback(message: CallbackMessage, agent: Agent, timeoutMs: number): Promise<CallbackResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const deadline = new Deadline(timeoutMs);
  try {
    const res = await request(message.callbackUrl, {
      method: 'POST',
      dispatcher: agent,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'hookstream-callback-bridge',
        ...(message.traceparent ? { traceparent: message.traceparent } : {}),
        ...webhookHeaders(message.secret, message.webhookId, Math.floor(Date.now() / 1000), message.body),
      },
      body: message.body,
      maxRedirections: 0,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: deadline,
    });
    await res.body.dump().catch(() => undefined);
    const statusCode = res.statusCode;
    if (statusCode >= 200 && statusCode < 300) return { outcome: 'delivered', statusCode, latencyMs: elapsed() };
    if (statusCode === 403) return { outcome: 'refused', statusCode, latencyMs: elapsed() };
    if (statusCode === 410) return { outcome: 'gone', statusCode, latencyMs: elapsed() };
    return {
      outcome: 'failed',
      statusCode,
      latencyMs: elapsed(),
      error: `answered ${statusCode}`,
      retryAfterMs: retryAfterMs(res.headers['retry-after']),
    };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    const code = e.code ?? e.cause?.code ?? e.name;
    return { outcome: 'failed', latencyMs: elapsed(), error: `${code}: ${e.message}` };
  } finally {
    deadline.clear();
  }
}

/**
 * The whole attempt's time limit, connection to the end of the answer, as the signal undici takes: an EventEmitter
 * with `aborted` and `reason` (undici accepts one in place of an AbortSignal). AbortSignal.timeout and its listener
 * cost more than the rest of an attempt's own work; a plain timer, cleared when the answer is in, does not.
 */
class Deadline extends EventEmitter {
  aborted = false;
  reason: Error | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number) {
    super();
    this.timer = setTimeout(() => {
      this.aborted = true;
      // Named as AbortSignal.timeout names it, so the history reads as before: "TimeoutError: …".
      this.reason = Object.assign(new Error(`no answer within ${ms} ms`), { name: 'TimeoutError' });
      this.emit('abort');
    }, ms);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** Exponential backoff with full jitter in [delay/2, delay], or the receiver's Retry-After; capped. */
export function backoffMs(
  attempt: number,
  baseMs: number,
  maxMs: number,
  retryAfter?: number,
  random = Math.random,
): number {
  if (retryAfter !== undefined) return Math.min(maxMs, retryAfter);
  const delay = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(delay / 2 + (random() * delay) / 2);
}
