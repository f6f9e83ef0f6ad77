import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { addRequestStep } from './convention-hooks';

/**
 * A caller's `X-Request-Id` is kept when it is one short, printable token
 * (it goes into logs and the Problem's `logref`, so nothing that could forge a
 * log line or blow one up); anything else, or none, gets a fresh UUID.
 */
const ACCEPTABLE = /^[\x21-\x7e]{1,128}$/;

export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && ACCEPTABLE.test(given) ? given : randomUUID();
}

/** Every response, Problems included, names the request id it was logged under. */
export const requestIdPlugin = fp(
  async (app: FastifyInstance) => {
    addRequestStep(app, (request, reply) => {
      reply.header('x-request-id', request.id);
    });
  },
  { name: 'hookstream-request-id' },
);
