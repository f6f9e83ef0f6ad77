import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addVary } from '../http/vary';
import { preferredWait } from '../http/prefer';
import { linkedAbort } from '../lib/linked-abort';
import { isFinal, type TaskSnapshot } from './task-snapshot';
import type { TaskStore } from './task-store';

/**
 * How long a client should wait before polling a task that is not final
 * (Retry-After, seconds): often at first, when short tasks end, then less.
 */
export function pollIntervalSeconds(t: TaskSnapshot, now = Date.now()): number {
  const age = now - Date.parse(t.createdAt);
  return age < 10000 ? 1 : age < 60000 ? 2 : 5;
}

/**
 * Holds the request until its task is final, for at most `Prefer: wait`
 * seconds. The connection's idle limit is lifted meanwhile: a silent wait is
 * not an idle client. A client that leaves ends the wait. With nothing to wait
 * for, the task itself comes back at once, not in a promise: a poll is answered
 * in the same turn.
 */
export function waitAsPreferred(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  store: TaskStore,
  task: TaskSnapshot,
  closing: AbortSignal,
): TaskSnapshot | Promise<TaskSnapshot | undefined> {
  const wait = preferredWait(request);
  addVary(reply, 'Prefer');
  if (wait === undefined) return task;
  reply.header('preference-applied', `wait=${wait}`);
  if (isFinal(task.status) || wait === 0) return task;
  return waitForFinal(app, request, reply, store, task, wait, closing);
}

async function waitForFinal(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  store: TaskStore,
  task: TaskSnapshot,
  wait: number,
  closing: AbortSignal,
): Promise<TaskSnapshot | undefined> {
  const socket = request.raw.socket;
  const idle = app.server.timeout;
  if (idle > 0) socket.setTimeout(idle + wait * 1000);
  const left = new AbortController();
  const onClose = () => left.abort();
  reply.raw.once('close', onClose);
  // The client leaves, or the server closes: a wait ends early with the task as it is then (RFC 7240 lets a
  // server answer before the preferred time), so a shutdown never waits for a task to finish.
  const ended = linkedAbort([left.signal, closing]);
  try {
    return await store.awaitFinal(task.taskId, wait * 1000, ended.signal);
  } finally {
    ended.unlink();
    reply.raw.off('close', onClose);
    if (idle > 0 && !socket.destroyed) socket.setTimeout(idle);
  }
}

/** A tracking resource that is not final says when to look again (Retry-After). */
export function tracking(reply: FastifyReply, t: TaskSnapshot): FastifyReply {
  if (!isFinal(t.status)) reply.header('retry-after', String(pollIntervalSeconds(t)));
  return reply;
}
