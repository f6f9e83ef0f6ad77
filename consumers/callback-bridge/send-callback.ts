import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { guardedLookup, isInternalAddress } from '../../src/subscriptions/callback-url-policy';
import { webhookSignature } from '../../src/subscriptions/webhook-signature';

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

/** RFC 9110 §5.6.7's three HTTP-date forms: IMF-fixdate, rfc850 and asctime (which is GMT too, but says no zone). */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC850_DATE = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME_DATE = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/**
 * Retry-After as seconds or an HTTP date; anything else is no Retry-After, and the backoff stands. Only the
 * RFC's forms are parsed: V8's Date.parse reads "1.5", "-1" or "foo 1" as dates in 2001, which made the wait 0.
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  let at = Number.NaN;
  if (IMF_FIXDATE.test(value) || RFC850_DATE.test(value)) at = Date.parse(value);
  else if (ASCTIME_DATE.test(value)) at = Date.parse(`${value} GMT`);
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
  try {
    const target = callbackTarget(message.callbackUrl);
    // The bytes that are signed are the bytes that are sent: encoded once (undici would encode a string body again).
    const body = Buffer.from(message.body);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'hookstream-callback-bridge',
      'webhook-id': message.webhookId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': webhookSignature(message.secret, message.webhookId, timestamp, body),
    };
    if (message.traceparent) headers.traceparent = message.traceparent;
    const answer = await new Promise<Answer>((resolve, reject) => {
      const exchange = new Exchange(timeoutMs, resolve, reject);
      agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers,
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        exchange,
      );
    });
    const statusCode = answer.statusCode;
    if (statusCode >= 200 && statusCode < 300) return { outcome: 'delivered', statusCode, latencyMs: elapsed() };
    if (statusCode === 403) return { outcome: 'refused', statusCode, latencyMs: elapsed() };
    if (statusCode === 410) return { outcome: 'gone', statusCode, latencyMs: elapsed() };
    return {
      outcome: 'failed',
      statusCode,
      latencyMs: elapsed(),
      error: `answered ${statusCode}`,
      retryAfterMs: retryAfterMs(answer.retryAfter),
    };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
    const code = e.code ?? e.cause?.code ?? e.name;
    return { outcome: 'failed', latencyMs: elapsed(), error: `${code}: ${e.message}` };
  }
}

interface CallbackTarget {
  origin: string;
  path: string;
}

/** Parsed callback URLs: a lane sends every callback to the same one, and parsing it each time cost a URL object. */
const targets = new Map<string, CallbackTarget>();
/** Bounded: past this many distinct callback URLs the oldest is dropped (and parsed again when next used). */
const MAX_TARGETS = 1000;

/** Throws for a URL that does not parse (the caller's catch makes that a failed attempt). */
function callbackTarget(callbackUrl: string): CallbackTarget {
  let target = targets.get(callbackUrl);
  if (!target) {
    const url = new URL(callbackUrl);
    if (targets.size >= MAX_TARGETS) targets.delete(targets.keys().next().value as string);
    targets.set(callbackUrl, (target = { origin: url.origin, path: pathAsGiven(callbackUrl, url) }));
  }
  return target;
}

/** Printable ASCII but space: what an HTTP request line carries as it is. */
const PRINTABLE = /^[\x21-\x7e]*$/;

/**
 * The spec asks for a POST to exactly the URL registered, and the WHATWG parser rewrites paths (it removes `/../`,
 * percent-encodes `{` and `|`): a receiver routing on its raw path would miss. So the path and query are sent as
 * written, unless they hold a backslash (which the parser reads as `/`; sent as written, `/\evil.com` would be
 * read by some receivers as another host), or do not mean the same as the parsed ones. Non-ASCII, which a request
 * line cannot carry, is percent-encoded as the parser would (a lone surrogate, which has no UTF-8, sends the parsed).
 */
function pathAsGiven(callbackUrl: string, url: URL): string {
  // What follows the origin in the parsed URL, without its fragment: `search` alone drops the `?` of an empty query.
  const parsed = url.href.slice(url.origin.length).split('#')[0];
  const afterScheme = callbackUrl.indexOf('//') + 2;
  const authorityEnd = callbackUrl.slice(afterScheme).search(/[/?#]/);
  if (authorityEnd < 0) return parsed;
  let raw = callbackUrl.slice(afterScheme + authorityEnd).split('#')[0];
  if (raw.startsWith('?')) raw = `/${raw}`;
  // The parser reads a backslash as `/` on both sides of the comparison below, which would let it through.
  if (raw === '' || raw.includes('\\')) return parsed;
  try {
    // Non-ASCII cannot go on a request line: it alone is percent-encoded (UTF-8, as the parser does), not the rest.
    if (!PRINTABLE.test(raw)) raw = raw.replace(/[^\x21-\x7e]+/g, (text) => encodeURIComponent(text));
    if (!PRINTABLE.test(raw)) return parsed;
    return new URL(raw, url.origin).href === new URL(parsed, url.origin).href ? raw : parsed;
  } catch {
    return parsed;
  }
}

interface Answer {
  statusCode: number;
  retryAfter?: string;
}

/** What is read of an answer's body at most; past it the connection is dropped (the status is known by then). */
const BODY_LIMIT = 128 * 1024;

/**
 * One callback's exchange, as an undici dispatch handler: the status and Retry-After are kept, the body is read
 * and dropped. undici's request() would wrap the answer in a stream, the deadline in an abort listener and the
 * call in an async resource: about as much of the bridge's time per callback as the rest of the attempt.
 *
 * The whole exchange, connection to the end of the answer, has one time limit; a plain timer, cleared when the
 * answer is in. An answer whose status came in before the limit (or before its body passed BODY_LIMIT) counts.
 */
class Exchange implements Dispatcher.DispatchHandlers {
  private answer: Answer | undefined;
  private abort: ((err: Error) => void) | undefined;
  private reason: Error | undefined;
  private received = 0;
  private done = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    timeoutMs: number,
    private readonly resolve: (answer: Answer) => void,
    private readonly reject: (err: Error) => void,
  ) {
    this.timer = setTimeout(() => {
      // Named as AbortSignal.timeout names it, so the history reads as before: "TimeoutError: …".
      this.stop(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' }));
    }, timeoutMs);
  }

  onConnect(abort: (err?: Error) => void): void {
    if (this.reason) abort(this.reason);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, headers: Buffer[] | string[] | null): boolean {
    if (statusCode < 200) return true; // 1xx: the answer is still to come
    this.answer = { statusCode, retryAfter: header(headers, 'retry-after') };
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.received += chunk.length;
    if (this.received > BODY_LIMIT) this.stop(new Error('answer body too long'));
    return true;
  }

  onComplete(): void {
    this.finish();
  }

  onError(err: Error): void {
    this.finish(err);
  }

  /** Ends the exchange early: with the answer when its status is in, else as a failure. */
  private stop(reason: Error): void {
    if (this.done) return;
    this.reason = reason;
    this.finish(this.answer ? undefined : reason);
    this.abort?.(reason);
  }

  private finish(err?: Error): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.timer);
    // Once the status is in, it is the answer, whatever happens to the body (a reset, a short Content-Length): a
    // 2xx is delivered and a 410 ends the subscription, as when the body is dropped unread.
    if (this.answer) this.resolve(this.answer);
    else this.reject(err ?? new Error('the connection ended without an answer'));
  }
}

/** A header's first value from undici's raw headers (name, value, name, value, …). */
function header(raw: Buffer[] | string[] | null, name: string): string | undefined {
  if (!raw) return undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i].length === name.length && raw[i].toString().toLowerCase() === name) return raw[i + 1].toString();
  }
  return undefined;
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
