import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { problem } from '../problems/problem-detail';
import type { ProblemKind } from '../problems/problem-types';
import { instanceUri } from './instance-uri';
import { PROBLEM_CONTENT_TYPE } from './problem-plugin';
import type { RawAnswers } from './raw-answers';
import { requestIdOf } from './request-id';

/**
 * How much more of a body refused as too large is read and dropped, so that the client, still sending, reads the 413
 * instead of a reset, and its connection stays usable. A body declared longer, or that goes on past it, is cut.
 */
export const DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * Answers a request before its body was asked for, as a Problem. The body never comes (the client waits for a
 * 100 Continue that is not sent), so the connection cannot carry another request: it is closed after the answer.
 */
export function answerBeforeBody(
  req: IncomingMessage,
  res: ServerResponse,
  answers: RawAnswers,
  answer: { status: number; kind: ProblemKind; detail: string },
): void {
  const since = performance.now();
  const id = requestIdOf(req);
  const instance = instanceUri((req.url ?? '/').split('?')[0]);
  const body = JSON.stringify(problem(answer.kind, answer.detail, { instance, logref: id }));
  res.writeHead(answer.status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    'content-length': Buffer.byteLength(body),
    'x-request-id': id,
    connection: 'close',
  });
  res.end(body);
  const detail = { expect: req.headers.expect };
  answers.answered({ reqId: id, method: req.method, url: req.url, statusCode: answer.status, since, detail });
}

const declaredLength = (req: IncomingMessage) => Number(req.headers['content-length'] ?? NaN);

/**
 * A body larger than BODY_LIMIT_BYTES is a 413 Problem that the client gets to read.
 *
 * - `Expect: 100-continue` with a Content-Length over the limit (curl sends one for large bodies) is answered 413 at
 *   once, instead of Node's automatic 100 Continue: the body is never sent (RFC 9110 §10.1.1).
 * - Otherwise Fastify refuses the body unread and closes the connection, and a client still sending gets a reset
 *   rather than the answer. The rest of the body is read and dropped instead (up to DRAIN_BYTES; longer, the
 *   connection is cut as before), so the 413 arrives and the connection is kept. HTTP_REQUEST_TIMEOUT_MS bounds how
 *   long a slow client may take to send it.
 */
export const bodyLimitPlugin = fp(
  async (app: FastifyInstance, { answers }: { answers: RawAnswers }) => {
    const limit = app.initialConfig.bodyLimit ?? 1048576;
    app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      const length = declaredLength(req);
      if (length > limit) {
        const detail = `The body would be ${length} bytes, larger than the ${limit} bytes taken.`;
        answerBeforeBody(req, res, answers, { status: 413, kind: 'payload-too-large', detail });
        return;
      }
      res.writeContinue();
      app.server.emit('request', req, res);
    });
    app.addHook('onSend', async (request, reply, payload) => {
      const raw = request.raw;
      if (reply.statusCode !== 413 || reply.getHeader('connection') !== 'close' || raw.complete) return payload;
      if (declaredLength(raw) > limit + DRAIN_BYTES) return payload;
      reply.removeHeader('connection');
      let drained = 0;
      raw.on('data', (chunk: Buffer) => {
        drained += chunk.length;
        if (drained > DRAIN_BYTES) raw.socket.destroy();
      });
      raw.resume();
      return payload;
    });
  },
  { name: 'hookstream-body-limit' },
);
