import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { HAL_MEDIA_TYPE, isHal } from './hal';

/** Every 2xx body is HAL, served as application/hal+json. */
export const halPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('preSerialization', (_request, reply, payload, done) => {
      if (reply.statusCode < 300 && isHal(payload)) reply.type(HAL_MEDIA_TYPE);
      done(null, payload);
    });
  },
  { name: 'hookstream-hal' },
);
