import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logger';
import { problem } from '../problems/problem-detail';
import type { ProblemKind } from '../problems/problem-types';
import { PROBLEM_MEDIA_TYPE } from './problem-plugin';

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

/** The path of the request line Node could not finish parsing, when the bytes it kept have one; else `/`. */
function instanceOf(err: ClientError): string {
  const raw = err.rawPacket;
  if (!raw) return '/';
  const line = raw.subarray(0, Math.min(raw.length, MAX_INSTANCE_LENGTH + 64)).toString('latin1');
  const target = /^[A-Z]+ (\/[^\s?#]*)/.exec(line)?.[1];
  return target && target.length <= MAX_INSTANCE_LENGTH ? target : '/';
}

/**
 * A request Node cut (too slow) or could not parse never reaches Fastify's hooks: it is answered with
 * a Problem written straight to the socket, unless part of a response already went out on it. It has no
 * request id yet, so one is made for its `logref`, and logged with the error.
 */
export function answerClientError(err: ClientError, socket: Duplex, logger: Logger): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    // A client that went away is routine, and nobody is told a logref: not worth an info line.
    logger.debug({ err: loggableClientError(err) }, 'client error');
    socket.destroy();
    return;
  }
  const logref = randomUUID();
  logger.info({ err: loggableClientError(err), reqId: logref }, 'client error');
  const known = CLIENT_ERRORS[err.code ?? ''] ?? {
    kind: 'bad-request',
    status: '400 Bad Request',
    detail: `The HTTP request could not be parsed (${err.code ?? 'malformed'}).`,
  };
  const body = JSON.stringify(problem(known.kind, known.detail, { instance: instanceOf(err), logref }));
  const head =
    `HTTP/1.1 ${known.status}\r\nContent-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}` +
    `\r\nX-Request-Id: ${logref}\r\nConnection: close`;
  // Destroyed once written: a slow client must not keep the socket by sending more.
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
}
