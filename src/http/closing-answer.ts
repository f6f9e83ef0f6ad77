import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ProblemError } from '../problems/problem-error';
import { addRequestStep } from './convention-hooks';

/**
 * A request that reaches a server already closing (on a kept-alive connection) is a 503 Problem like any other:
 * Fastify's own answer (`return503OnClosing`) is plain JSON with no Retry-After and no request id, which a client
 * branching on application/problem+json would not take for "try again". Fastify closes the connection after it.
 */
export const closingAnswerPlugin = fp(
  async (app: FastifyInstance) => {
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    addRequestStep(app, () => {
      if (!closing) return;
      throw new ProblemError('not-ready', 'This instance is shutting down; send the request again.', {
        headers: { 'retry-after': '1', connection: 'close' },
      });
    });
  },
  { name: 'hookstream-closing-answer' },
);
