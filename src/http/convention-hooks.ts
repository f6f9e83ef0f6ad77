import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** A convention's work on a request as it arrives; it answers with a Problem by throwing a ProblemError. */
export type RequestStep = (request: FastifyRequest, reply: FastifyReply) => void;

/** A convention's work on a 2xx or Problem body before it is serialized: the body to send on. */
export type SerializationStep = (request: FastifyRequest, reply: FastifyReply, payload: unknown) => unknown;

interface Steps {
  onRequest?: RequestStep[];
  preSerialization?: SerializationStep[];
}

const stepsOf = new WeakMap<FastifyInstance, Steps>();

function stepsFor(app: FastifyInstance): Steps {
  let steps = stepsOf.get(app);
  if (steps === undefined) stepsOf.set(app, (steps = {}));
  return steps;
}

/*
 * The conventions (request id, trace context, Host, content negotiation, API key; HAL, selection) each did their
 * work in a Fastify hook of their own, and Fastify pays per hook on every request: a turn of its hook runner, a
 * `reply.sent` check and a callback. Their steps now run in one hook per phase, in the order the conventions were
 * registered, which is the order their hooks ran in. Fastify stops at a hook that throws; so does the loop, and the
 * error goes to the same error handler. A hook added with app.addHook after the first step runs after all of them.
 */

/** Runs `step` on every request, in the conventions' one onRequest hook. */
export function addRequestStep(app: FastifyInstance, step: RequestStep): void {
  const steps = stepsFor(app);
  if (steps.onRequest !== undefined) {
    steps.onRequest.push(step);
    return;
  }
  const all = (steps.onRequest = [step]);
  app.addHook('onRequest', (request, reply, done) => {
    for (let i = 0; i < all.length; i += 1) all[i](request, reply);
    done();
  });
}

/** Runs `step` on every body Fastify serializes, in the conventions' one preSerialization hook. */
export function addSerializationStep(app: FastifyInstance, step: SerializationStep): void {
  const steps = stepsFor(app);
  if (steps.preSerialization !== undefined) {
    steps.preSerialization.push(step);
    return;
  }
  const all = (steps.preSerialization = [step]);
  app.addHook('preSerialization', (request, reply, payload, done) => {
    let body = payload;
    for (let i = 0; i < all.length; i += 1) body = all[i](request, reply, body);
    done(null, body);
  });
}
