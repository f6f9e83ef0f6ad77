import type { FastifyInstance } from 'fastify';
import { tenantOf } from '../http/auth';
import { halResource, link, type HalResource } from '../http/hal';
import { pageLinks, pageQuerySchema, type PageQuery } from '../http/paging';
import { problem, ProblemError, type ProblemDetail } from '../http/problem';
import { compile, requireObjectBody, validationErrors } from '../http/validation';
import type { OutgoingRecord } from '../kafka/types';
import type { TaskRegistry } from './task-registry';
import { taskRepresentation } from './task-representation';
import { isFinal, TASK_STATUSES, type TaskSnapshot, type TaskStatus } from './task-snapshot';
import type { TaskStore } from './task-store';

/** What a callbackUrl in POST /tasks turns into; the subscriptions module provides it. */
export interface TaskSubscriber {
  /** validates the callback; throws a 403 ProblemError when it is rejected */
  prepare(tenant: string, callbackUrl: string, mode: 'once' | 'continuous'): Promise<{ id: string; records(taskId: string): OutgoingRecord[] }>;
}

export interface TaskRouteDeps {
  registry: TaskRegistry;
  store: TaskStore;
  subscriber?: TaskSubscriber;
  /** the representation of a task's subscription, for `?embedded=subscription` */
  subscriptionOf?: (id: string) => HalResource | undefined;
}

const validateSubmission = compile({
  type: 'object',
  properties: {
    type: { type: 'string', minLength: 1, maxLength: 100 },
    input: {},
    callbackUrl: { type: 'string', minLength: 1, maxLength: 2048 },
    mode: { enum: ['once', 'continuous'] },
  },
  required: ['type', 'input'],
  additionalProperties: false,
});

const validateStatusPatch = compile({
  type: 'object',
  properties: { status: { const: 'cancelled' } },
  required: ['status'],
  additionalProperties: false,
});

type ListQuery = PageQuery & { type?: string; status?: TaskStatus };
type TaskParams = { Params: { taskId: string } };

export async function taskRoutes(app: FastifyInstance, deps: TaskRouteDeps): Promise<void> {
  const { store, registry } = deps;
  const represent = (t: TaskSnapshot) => taskRepresentation(t, store.cancelRequested(t.taskId), deps.subscriptionOf);

  /** A tenant never sees another tenant's tasks: they are simply not found. */
  function ownTask(tenant: string, taskId: string): TaskSnapshot {
    const task = store.get(taskId);
    if (!task || task.tenant !== tenant) throw new ProblemError('not-found', `There is no task ${JSON.stringify(taskId)}.`);
    return task;
  }

  // Spec: an asynchronous operation answers 202 with a task-tracking resource.
  app.post('/tasks', async (request, reply) => {
    const body = requireObjectBody(request.body);
    const errors: ProblemDetail[] = validationErrors(validateSubmission, body);
    if (errors.length === 0) errors.push(...registry.inputErrors(body.type, body.input));
    if (errors.length > 0) throw new ProblemError('validation-failed', 'The task submission is invalid; see errors.', { errors });
    const tenant = tenantOf(request);
    let subscription: Awaited<ReturnType<TaskSubscriber['prepare']>> | undefined;
    if (typeof body.callbackUrl === 'string') {
      if (!deps.subscriber) throw new ProblemError('validation-failed', 'Callbacks are not enabled on this api.', { errors: [problem('invalid-field', '/callbackUrl is not supported here', { instance: '/callbackUrl' })] });
      subscription = await deps.subscriber.prepare(tenant, body.callbackUrl, (body.mode as 'once' | 'continuous' | undefined) ?? 'once');
    }
    const task = await store.submit({
      tenant, type: body.type as string, input: body.input, subscription: subscription?.id, alongside: subscription?.records,
    });
    return reply.code(202).header('location', `/tasks/${task.taskId}`).send(represent(task));
  });

  app.get<{ Querystring: ListQuery }>('/tasks', {
    schema: {
      querystring: {
        ...pageQuerySchema,
        properties: { ...pageQuerySchema.properties, type: { type: 'string', maxLength: 100 }, status: { enum: [...TASK_STATUSES] } },
      },
    },
  }, async (request) => {
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

  app.get<TaskParams>('/tasks/:taskId', async (request) => {
    return represent(ownTask(tenantOf(request), request.params.taskId));
  });

  // Spec: a status update is a PATCH. Cancelling is asynchronous: 202, then task.cancelled.
  app.patch<TaskParams>('/tasks/:taskId', async (request, reply) => {
    const task = ownTask(tenantOf(request), request.params.taskId);
    const body = requireObjectBody(request.body);
    const errors = validationErrors(validateStatusPatch, body);
    if (errors.length > 0) throw new ProblemError('validation-failed', 'The only change a task accepts is {"status": "cancelled"}.', { errors });
    if (isFinal(task.status)) throw new ProblemError('task-already-finished', `The task has already ${task.status}; it cannot be cancelled.`);
    await store.requestCancel(task.taskId);
    return reply.code(202).send(taskRepresentation(store.get(task.taskId) ?? task, true));
  });
}
