import { setMaxListeners } from 'node:events';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { v4 as uuidv4 } from 'uuid';
import { linkedAbort } from '../lib/linked-abort';
import { tenantOf } from '../http/auth';
import { evaluatePreconditions } from '../http/preconditions';
import { halResource, link, type HalResource } from '../http/hal';
import { addVary } from '../http/vary';
import { idempotently } from '../http/idempotency';
import type { IdempotencyKeys } from '../idempotency/idempotency-keys';
import { bodyErrors, REPORTS_BODY_ERRORS } from '../http/body-validation';
import { pageLinks, type PageQuery } from '../http/paging';
import { preferredWait } from '../http/prefer';
import { problem, type ProblemDetail } from '../problems/problem-detail';
import { ProblemError } from '../problems/problem-error';
import type { OutgoingRecord, PartitionReader, WrittenRecord } from '../kafka/types';
import type { Logger } from '../logger';
import { taskEventRoutes } from './task-event-routes';
import { echoErrors } from './task-patch';
import type { TaskRegistry } from './task-registry';
import { taskRepresentation } from './task-representation';
import { taskRouteSchemas, taskSchema, type TaskSubmission } from './task-schemas';
import { isFinal, type TaskSnapshot, type TaskStatus } from './task-snapshot';
import type { TaskStore } from './task-store';

/** A subscription made for a task, written in the task's acceptance transaction. */
export interface PreparedSubscription {
  id: string;
  /** its records for the task; the same subscription (and secret) on every call for one task */
  records(taskId: string): OutgoingRecord[];
  /** after records(): its representation with the secret, shown once in the 202 */
  created(): HalResource | undefined;
  /** its records were written (with the task's): the subscriptions view of this process applies them */
  written(records: WrittenRecord[]): void;
}

/** What a callbackUrl in POST /tasks turns into; the subscriptions module provides it. */
export interface TaskSubscriber {
  /** validates the callback; throws a 403 ProblemError when it is rejected */
  prepare(tenant: string, callbackUrl: string, mode: 'once' | 'continuous'): Promise<PreparedSubscription>;
}

export interface TaskRouteDeps {
  registry: TaskRegistry;
  store: TaskStore;
  subscriber?: TaskSubscriber;
  /** the representation of a task's subscription, for `?embedded=subscription` */
  subscriptionOf?: (id: string) => HalResource | undefined;
  /** resolves once that representation shows what ended the subscription (DeliveryHistory.explaining) */
  subscriptionExplained?: (id: string) => Promise<void> | undefined;
  /** a subscription as its creating answer showed it, secret included: a repeated keyed POST shows it again */
  createdSubscriptionOf?: (id: string) => HalResource | undefined;
  /** Idempotency-Key state; without it the header is ignored */
  idempotency?: IdempotencyKeys;
  /** reads a task's partition for GET /tasks/{id}/events; without it that route is absent */
  events?: { reader: PartitionReader; timeoutMs: number; heartbeatMs: number; logger: Logger };
}

type ListQuery = PageQuery & { type?: string; status?: TaskStatus };
type TaskParams = { Params: { taskId: string } };

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
function waitAsPreferred(
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

export async function taskRoutes(app: FastifyInstance, deps: TaskRouteDeps): Promise<void> {
  const { store, registry } = deps;
  const schemas = taskRouteSchemas(registry.names());
  const closing = new AbortController();
  // Every request waiting (Prefer: wait) listens for the close until its wait ends: hundreds at once are normal,
  // not the leak Node warns of past ten.
  setMaxListeners(Infinity, closing.signal);
  app.addHook('preClose', async () => closing.abort());
  app.addSchema(taskSchema);
  const represent = (t: TaskSnapshot) =>
    taskRepresentation(t, {
      cancelRequested: store.cancelRequested(t.taskId),
      subscriptionOf: deps.subscriptionOf,
      retentionMs: store.retentionMs,
    });

  /** A tenant never sees another tenant's tasks: they are simply not found. */
  function ownTask(tenant: string, taskId: string): TaskSnapshot {
    const task = store.get(taskId);
    if (!task || task.tenant !== tenant)
      throw new ProblemError('not-found', `There is no task ${JSON.stringify(taskId)}.`);
    return task;
  }

  /** A tracking resource that is not final says when to look again. */
  function tracking(reply: FastifyReply, t: TaskSnapshot): FastifyReply {
    if (!isFinal(t.status)) reply.header('retry-after', String(pollIntervalSeconds(t)));
    return reply;
  }

  // Spec: an asynchronous operation answers 202 with a task-tracking resource.
  app.post('/tasks', { schema: schemas.submit, ...REPORTS_BODY_ERRORS }, async (request, reply) => {
    const errors: ProblemDetail[] = bodyErrors(request);
    // Typed from its schema; read only once the schema found no errors.
    const body = request.body as TaskSubmission;
    if (errors.length === 0) errors.push(...registry.inputErrors(body.type, body.input));
    // A continuous subscription with nowhere to call back would be accepted and never heard of again.
    if (errors.length === 0 && body.mode === 'continuous' && body.callbackUrl === undefined) {
      errors.push(problem('invalid-field', '/mode continuous needs a callbackUrl', { instance: '/mode' }));
    }
    if (errors.length > 0)
      throw new ProblemError('validation-failed', 'The task submission is invalid; see errors.', { errors });
    const tenant = tenantOf(request);
    // Chosen now, so an Idempotency-Key's answer can name the task in the transaction that creates it.
    const taskId = uuidv4();
    let subscription: PreparedSubscription | undefined;
    type Accepted = { task: TaskSnapshot; created?: HalResource };
    const accepted = await idempotently<Accepted>(request, reply, deps.idempotency, {
      describe: (records) => ({
        status: 202,
        ids: [taskId, ...(subscription ? [subscription.id] : [])],
        createdAt: createdAtIn(records, taskId),
      }),
      replay: (answer, answeredAt) => {
        const found = store.get(answer.ids[0]);
        // A Kafka client names its own tasks: once the keyed one was forgotten, its id may name another since. The
        // answer names its task's creation; one written before it did (no createdAt) is told by the answer's time.
        const same = (t: TaskSnapshot) =>
          answer.createdAt !== undefined ? t.createdAt === answer.createdAt : Date.parse(t.createdAt) <= answeredAt;
        const task = found?.tenant === tenant && same(found) ? found : undefined;
        if (!task) {
          const detail = `The task this Idempotency-Key created (${answer.ids[0]}) has been forgotten since.`;
          throw new ProblemError('not-found', detail);
        }
        const subscriptionId = answer.ids[1];
        const created = subscriptionId === undefined ? undefined : deps.createdSubscriptionOf?.(subscriptionId);
        return { task, created };
      },
      create: async (keyed) => {
        if (typeof body.callbackUrl === 'string') {
          if (!deps.subscriber) {
            throw new ProblemError('validation-failed', 'Callbacks are not enabled on this api.', {
              errors: [problem('invalid-field', '/callbackUrl is not supported here', { instance: '/callbackUrl' })],
            });
          }
          const mode = body.mode ?? 'once';
          subscription = await deps.subscriber.prepare(tenant, body.callbackUrl, mode);
        }
        const task = await store.submit({
          taskId,
          tenant,
          type: body.type,
          input: body.input,
          subscription: subscription?.id,
          alongside: subscription?.records,
          alongsideWritten: subscription?.written,
          trace: request.trace,
          idempotency: keyed,
        });
        // A subscription made here shows its secret in this 202, the one time it is shown.
        return { task, created: subscription?.created() };
      },
    });
    const task = (await waitAsPreferred(app, request, reply, store, accepted.task, closing.signal)) ?? accepted.task;
    const rep = taskRepresentation(task, {
      cancelRequested: store.cancelRequested(task.taskId),
      subscriptionOf: deps.subscriptionOf,
      created: accepted.created,
      retentionMs: store.retentionMs,
    });
    return tracking(reply, task).code(202).header('location', `/tasks/${task.taskId}`).send(rep);
  });

  app.get<{ Querystring: ListQuery }>('/tasks', { schema: schemas.list }, async (request) => {
    const { offset, limit, type, status } = request.query;
    const all = store.list(tenantOf(request), { type, status });
    const page = all.slice(offset, offset + limit);
    const filter = `${type ? `type=${encodeURIComponent(type)}&` : ''}${status ? `status=${status}&` : ''}`;
    return halResource(
      { count: page.length, total: all.length },
      { ...pageLinks('/tasks', offset, limit, all.length, filter), item: page.map((t) => link(`/tasks/${t.taskId}`)) },
      { tasks: () => page.map(represent) },
      ['tasks'],
    );
  });

  // Not async: a poll with nothing to wait for is answered without a promise or a microtask turn.
  app.get<TaskParams>('/tasks/:taskId', { schema: schemas.get }, (request, reply) => {
    const tenant = tenantOf(request);
    const task = ownTask(tenant, request.params.taskId);
    // Forgotten meanwhile (DELETE, or its retention ended): gone, like any other unknown task.
    const send = (id: string) => {
      const current = ownTask(tenant, id);
      return tracking(reply, current).send(represent(current));
    };
    const answer = (now: TaskSnapshot | undefined) => {
      const current = ownTask(tenant, now?.taskId ?? task.taskId);
      const sub = current.subscription;
      const explained = sub === undefined ? undefined : deps.subscriptionExplained?.(sub);
      return explained ? explained.then(() => send(current.taskId)) : send(current.taskId);
    };
    const waited = waitAsPreferred(app, request, reply, store, task, closing.signal);
    if (waited instanceof Promise) return waited.then(answer);
    return answer(waited);
  });

  // Spec: a status update is a PATCH. Cancelling is asynchronous: 202, then task.cancelled.
  const cancelOptions = { schema: schemas.cancel, ...REPORTS_BODY_ERRORS };
  app.patch<TaskParams>('/tasks/:taskId', cancelOptions, async (request, reply) => {
    const task = ownTask(tenantOf(request), request.params.taskId);
    evaluatePreconditions(request);
    const errors = [...bodyErrors(request), ...echoErrors(request.body, represent(task))];
    if (errors.length > 0)
      throw new ProblemError('validation-failed', 'The only change a task accepts is {"status": "cancelled"}.', {
        errors,
      });
    if (isFinal(task.status)) throw alreadyFinished(task);
    await store.requestCancel(task.taskId);
    const current = store.get(task.taskId) ?? task;
    // The task ended on its own while the cancel was written: its outcome stands, and a 202 would promise otherwise.
    if (isFinal(current.status) && current.status !== 'cancelled') throw alreadyFinished(current);
    return tracking(reply, current)
      .code(202)
      .send(
        taskRepresentation(current, {
          cancelRequested: true,
          subscriptionOf: deps.subscriptionOf,
          retentionMs: store.retentionMs,
        }),
      );
  });

  /**
   * The snapshot's creation time among an accepted task's records (the transaction that also holds the answer). From
   * the last: the snapshot is written after the request, whose input (up to a megabyte) is then never parsed again.
   */
  function createdAtIn(records: OutgoingRecord[], taskId: string): string | undefined {
    for (const r of [...records].reverse()) {
      if (r.key !== taskId || r.value === null) continue;
      const value = JSON.parse(r.value) as { taskId?: unknown; createdAt?: unknown };
      if (value.taskId === taskId && typeof value.createdAt === 'string') return value.createdAt;
    }
    return undefined;
  }

  // Forgetting is for finished tasks; a running one is cancelled first (PATCH). A repeat is 404: it is gone.
  app.delete<TaskParams>('/tasks/:taskId', { schema: schemas.forget }, async (request, reply) => {
    await store.forgetOne(request.params.taskId, () => {
      const task = ownTask(tenantOf(request), request.params.taskId);
      evaluatePreconditions(request);
      if (!isFinal(task.status)) {
        throw new ProblemError(
          'task-not-finished',
          `The task is ${task.status}; only a finished task can be forgotten. Cancel it with PATCH first.`,
        );
      }
    });
    return reply.code(204).send();
  });

  if (deps.events) await taskEventRoutes(app, { store, ownTask, ...deps.events });
}

function alreadyFinished(task: TaskSnapshot): ProblemError {
  const ended = task.status === 'cancelled' ? 'been cancelled' : task.status;
  return new ProblemError('task-already-finished', `The task has already ${ended}; it cannot be cancelled.`);
}
