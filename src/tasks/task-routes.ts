import { setMaxListeners } from 'node:events';
import type { FastifyInstance } from 'fastify';
import { tenantOf } from '../http/auth';
import { evaluatePreconditions } from '../http/preconditions';
import { halResource, link, type HalResource } from '../http/hal';
import { bodyErrors, REPORTS_BODY_ERRORS } from '../http/body-validation';
import { pageLinks, type PageQuery } from '../http/paging';
import { ProblemError } from '../problems/problem-error';
import type { PartitionReader } from '../kafka/types';
import type { Logger } from '../logger';
import { taskEventRoutes } from './task-event-routes';
import { echoErrors } from './task-patch';
import { taskRepresentation } from './task-representation';
import { taskRouteSchemas, taskSchema } from './task-schemas';
import { isFinal, type TaskSnapshot, type TaskStatus } from './task-snapshot';
import { submitTask, type SubmissionDeps } from './task-submission';
import { tracking, waitAsPreferred } from './task-waiting';

export interface TaskRouteDeps extends SubmissionDeps {
  /** the representation of a task's subscription, for `?embedded=subscription` */
  subscriptionOf?: (id: string) => HalResource | undefined;
  /** resolves once that representation shows what ended the subscription (DeliveryHistory.explaining) */
  subscriptionExplained?: (id: string) => Promise<void> | undefined;
  /** reads a task's partition for GET /tasks/{id}/events; without it that route is absent */
  events?: { reader: PartitionReader; timeoutMs: number; heartbeatMs: number; logger: Logger };
}

type ListQuery = PageQuery & { type?: string; status?: TaskStatus };
type TaskParams = { Params: { taskId: string } };

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

  // Spec: an asynchronous operation answers 202 with a task-tracking resource.
  app.post('/tasks', { schema: schemas.submit, ...REPORTS_BODY_ERRORS }, async (request, reply) => {
    const accepted = await submitTask(request, reply, deps);
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
