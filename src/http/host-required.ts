import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host header is a 400. Node answers it itself with an empty body
 * unless told not to (app.ts turns requireHostHeader off), so the check is here, where the answer is a Problem.
 */
export const hostRequiredPlugin = fp(
  async (app: FastifyInstance) => {
    addRequestStep(app, (request) => {
      const { httpVersionMajor, httpVersionMinor } = request.raw;
      // An empty Host is allowed (RFC 9112 §3.2: a target with no authority); only a missing one is refused.
      if (httpVersionMajor === 1 && httpVersionMinor === 1 && request.headers.host === undefined) {
        throw new ProblemError('bad-request', 'An HTTP/1.1 request must carry a Host header.');
      }
    });
  },
  { name: 'hookstream-host-required' },
);
