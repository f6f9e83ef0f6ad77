import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { problem } from '../problems/problem-detail';
import type { ProblemKind } from '../problems/problem-types';
import type { AllowedMethods } from './connect-method';
import { instanceUri } from './instance-uri';
import { PROBLEM_CONTENT_TYPE } from './problem-plugin';
import type { RawAnswers } from './raw-answers';

/** What a client is told of the parser's errors that have a status of their own; any other is a 400. */
const CLIENT_ERRORS: Record<string, { kind: ProblemKind; status: string; detail: string }> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    kind: 'request-timeout',
    status: '408 Request Timeout',
    detail: 'The request did not arrive in time; the connection is closed.',
  },
  HPE_HEADER_OVERFLOW: {
    kind: 'headers-too-large',
    status: '431 Request Header Fields Too Large',
    detail: 'The request line and headers are larger than the server reads (16 KB); a very long URL is one cause.',
  },
};

/** A path longer than this is not repeated in `instance`: the answer to a 431 would be as large as its request. */
const MAX_INSTANCE_LENGTH = 2048;

type ClientError = NodeJS.ErrnoException & { rawPacket?: Buffer; reason?: string; bytesParsed?: number };

/**
 * The error as it may be logged. Node attaches the bytes it could not parse (`rawPacket`): the request's headers,
 * an Authorization header's API key among them, and up to 16 KB a line that any client can make the log repeat.
 * The copy keeps what says why (message, code, reason, stack) and how many bytes there were.
 */
export function loggableClientError(err: ClientError): Error {
  const copy = new Error(err.message) as ClientError;
  copy.name = err.name;
  copy.stack = err.stack;
  if (err.code !== undefined) copy.code = err.code;
  if (err.reason !== undefined) copy.reason = err.reason;
  if (err.bytesParsed !== undefined) copy.bytesParsed = err.bytesParsed;
  if (err.rawPacket) (copy as ClientError & { rawBytes?: number }).rawBytes = err.rawPacket.length;
  return copy;
}

/** A request line's method (an RFC 9110 token, of any case) and origin-form path, as far as the parser read it. */
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\/[^\s?#]*)(\S*)( HTTP\/1\.[01]\r?\n)?/;

/** The HTTP version a request line ends in, well formed (`HTTP/<digits>.<digits>`) whether or not Node speaks it. */
const LINE_VERSION = /^\S+ \S+ (HTTP\/\d{1,3}\.\d{1,3})\r?\n/;

interface RequestLine {
  method: string;
  path: string;
  /** the whole line was there and well formed: an HTTP/1.x request whose only fault may be its method */
  whole: boolean;
  /** the line's version, when it has a well-formed one */
  version?: string;
}

/** Where the request the parser stopped in begins: after the head (ended by a blank line) of any request before it. */
function requestStart(raw: Buffer, stoppedAt: number): number {
  const before = raw.subarray(0, stoppedAt);
  const crlf = before.lastIndexOf('\n\r\n');
  const lf = before.lastIndexOf('\n\n');
  return Math.max(crlf < 0 ? 0 : crlf + 3, lf < 0 ? 0 : lf + 2);
}

/**
 * The method and path of the request line Node could not finish parsing, when the bytes it kept have them. The bytes
 * are the chunk the failing request came in, which may begin with requests before it (pipelined, or the excess of a
 * body longer than its Content-Length): the failing one starts after the last blank line before where the parser
 * stopped.
 */
function requestLineOf(err: ClientError): RequestLine | undefined {
  const raw = err.rawPacket;
  if (!raw) return undefined;
  const stoppedAt = Math.min(err.bytesParsed ?? 0, raw.length);
  const start = requestStart(raw, stoppedAt);
  const line = raw.subarray(start, Math.min(raw.length, start + MAX_INSTANCE_LENGTH + 64)).toString('latin1');
  const [, method, path, , version] = REQUEST_LINE.exec(line) ?? [];
  if (!path || path.length > MAX_INSTANCE_LENGTH) return undefined;
  // Stopped in this line's method, and the rest of the line is a request's: the method alone is at fault.
  const whole = version !== undefined && stoppedAt - start <= method.length;
  return { method, path, whole, version: LINE_VERSION.exec(line)?.[1] };
}

/**
 * The method and path of a request whose head was parsed and whose body was still coming (a 408 for a slow body): the
 * parser has handed it on, so it kept no bytes of it. Read from Node's parser on the socket (undocumented; none: `/`).
 */
function requestBeingReceived(socket: Duplex): { method?: string; path?: string } {
  const incoming = (socket as Duplex & { parser?: { incoming?: { url?: unknown; method?: unknown } } }).parser
    ?.incoming;
  const method = typeof incoming?.method === 'string' ? incoming.method : undefined;
  const url = incoming?.url;
  if (typeof url !== 'string' || !url.startsWith('/')) return { method };
  const path = url.split('?')[0];
  return { method, path: path.length <= MAX_INSTANCE_LENGTH ? path : undefined };
}

interface ClientAnswer {
  kind: ProblemKind;
  status: string;
  detail: string;
  allow?: string;
}

/**
 * Node's parser refuses a method it does not know (`FOO`, `get`) before any route is looked up; DESIGN.md answers an
 * unsupported method on a known path with 405 and `Allow`, whatever the method, and a path no route has with 404.
 */
function unknownMethodAnswer(line: RequestLine, allowedOf: AllowedMethods): ClientAnswer {
  const allow = allowedOf(line.path);
  if (!allow) return { kind: 'not-found', status: '404 Not Found', detail: `No resource at ${line.path}.` };
  const list = allow.join(', ');
  const detail = `${line.method} is not supported on ${line.path}; use one of ${list}.`;
  return { kind: 'method-not-allowed', status: '405 Method Not Allowed', detail, allow: list };
}

function answerOf(err: ClientError, line: RequestLine | undefined, allowedOf?: AllowedMethods): ClientAnswer {
  if (err.code === 'HPE_INVALID_METHOD' && line?.whole && allowedOf) return unknownMethodAnswer(line, allowedOf);
  // Node's parser refuses every version but 0.9, 1.0, 1.1 and 2.0 (host-required.ts answers the last two); RFC 9110
  // §15.6.6 answers a version the server does not speak with 505, as the README promises for any but 1.0 and 1.1.
  if (err.code === 'HPE_INVALID_VERSION' && line?.version) {
    const detail = `${line.version} is not spoken here; send HTTP/1.1.`;
    return { kind: 'http-version-not-supported', status: '505 HTTP Version Not Supported', detail };
  }
  return (
    CLIENT_ERRORS[err.code ?? ''] ?? {
      kind: 'bad-request',
      status: '400 Bad Request',
      detail: `The HTTP request could not be parsed (${err.code ?? 'malformed'}).`,
    }
  );
}

/**
 * A request Node cut (too slow) or could not parse never reaches Fastify's hooks: it is answered with
 * a Problem written straight to the socket, unless part of a response already went out on it. It has no
 * request id yet, so one is made for its `logref`; its log line (raw-answers.ts) carries the error.
 */
export function answerClientError(
  err: ClientError,
  socket: Duplex,
  answers: RawAnswers,
  allowedOf?: AllowedMethods,
): void {
  const since = performance.now();
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    // A client that went away is routine, and nobody is told a logref: not worth an info line.
    answers.logger.debug({ err: loggableClientError(err) }, 'client error');
    socket.destroy();
    return;
  }
  const logref = randomUUID();
  const line = requestLineOf(err);
  const known = answerOf(err, line, allowedOf);
  const received = line ? undefined : requestBeingReceived(socket);
  const path = line?.path ?? received?.path ?? '/';
  const method = line?.method ?? received?.method;
  const body = JSON.stringify(problem(known.kind, known.detail, { instance: instanceUri(path), logref }));
  const head = [
    `HTTP/1.1 ${known.status}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(known.allow !== undefined ? [`Allow: ${known.allow}`] : []),
    `X-Request-Id: ${logref}`,
    'Connection: close',
  ].join('\r\n');
  // Destroyed once written: a slow client must not keep the socket by sending more.
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
  const statusCode = Number(known.status.slice(0, 3));
  answers.answered({
    reqId: logref,
    method,
    url: path,
    statusCode,
    since,
    err: loggableClientError(err),
  });
}
