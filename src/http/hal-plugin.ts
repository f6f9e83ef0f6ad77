import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { addSerializationStep } from './convention-hooks';
import { HAL_MEDIA_TYPE, isHal } from './hal';

/** Every 2xx body is HAL, served as application/hal+json. */
export const halPlugin = fp(
  async (app: FastifyInstance) => {
    addSerializationStep(app, (_request, reply, payload) => {
      if (reply.statusCode < 300 && isHal(payload)) reply.type(HAL_MEDIA_TYPE);
      return payload;
    });
  },
  { name: 'hookstream-hal' },
);
