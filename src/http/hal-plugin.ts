import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { addSerializationStep } from './convention-hooks';
import { halBodyType } from './content-negotiation';
import { isHal } from './hal';

/** Every 2xx body is HAL, served as application/hal+json (or application/json, when Accept prefers it). */
export const halPlugin = fp(
  async (app: FastifyInstance) => {
    addSerializationStep(app, (request, reply, payload) => {
      if (reply.statusCode < 300 && isHal(payload)) {
        reply.type(halBodyType(request.headers.accept));
        varyOnAccept(reply);
      }
      return payload;
    });
  },
  { name: 'hookstream-hal' },
);

/** One URL, two Content-Types: a cache must key the answer on Accept (RFC 9110 §12.5.5), beside what a route named. */
function varyOnAccept(reply: FastifyReply): void {
  const vary = reply.getHeader('vary');
  if (vary === undefined) reply.header('vary', 'Accept');
  else if (!/(^|,)\s*(accept|\*)\s*(,|$)/i.test(String(vary))) reply.header('vary', `${String(vary)}, Accept`);
}
