import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { problem } from '../problems/problem-detail';
import { PROBLEM_TYPES, type ProblemKind } from '../problems/problem-types';
import { instanceUri } from './instance-uri';
import { PROBLEM_CONTENT_TYPE } from './problem-plugin';
import type { RawAnswers } from './raw-answers';
import { requestIdOf } from './request-id';

/** The methods a path takes (with OPTIONS), or undefined when no route has it: what methodsPlugin knows. */
export type AllowedMethods = (path: string) => string[] | undefined;

function answerFor(target: string, allowedOf: AllowedMethods): { kind: ProblemKind; detail: string; allow?: string } {
  // The usual target is an authority (`host:port`): a tunnel, which this server is not, so no method at all applies.
  if (!target.startsWith('/')) {
    return { kind: 'method-not-allowed', detail: 'CONNECT is not supported: this server is no proxy.', allow: '' };
  }
  const path = target.split('?')[0];
  const allow = allowedOf(path);
  if (!allow) return { kind: 'not-found', detail: `No resource at ${path}.` };
  const list = allow.join(', ');
  return {
    kind: 'method-not-allowed',
    detail: `CONNECT is not supported on ${path}; use one of ${list}.`,
    allow: list,
  };
}

/**
 * Node hands a CONNECT to the server's 'connect' listeners, with the bare socket, and closes that socket unanswered
 * when there is none; so Fastify never sees it. It gets what any other unsupported method gets: a 405 Problem with
 * `Allow` (404 on a path no route has), written as an HTTP/1.1 response, and the connection closed.
 */
export function answerConnect(
  req: IncomingMessage,
  socket: Duplex,
  allowedOf: AllowedMethods,
  answers: RawAnswers,
): void {
  const since = performance.now();
  const id = requestIdOf(req);
  const target = req.url ?? '';
  const { kind, detail, allow } = answerFor(target, allowedOf);
  const instance = target.startsWith('/') ? { instance: instanceUri(target.split('?')[0]) } : {};
  const body = JSON.stringify(problem(kind, detail, { ...instance, logref: id }));
  const { status } = PROBLEM_TYPES[kind];
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(allow !== undefined ? [`Allow: ${allow}`] : []),
    `X-Request-Id: ${id}`,
    'Connection: close',
  ].join('\r\n');
  socket.on('error', () => socket.destroy());
  socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy());
  answers.answered({ reqId: id, method: 'CONNECT', url: target, statusCode: status, since });
}
