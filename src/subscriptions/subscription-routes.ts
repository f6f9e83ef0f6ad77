import { canonicalId } from '../lib/canonical-id';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { tenantOf } from '../http/auth';
import { evaluatePreconditions } from '../http/preconditions';
import { halResource, link } from '../http/hal';
import { idempotently } from '../http/idempotency';
import type { IdempotencyKeys } from '../idempotency/idempotency-keys';
import type { PartitionReader } from '../kafka/types';
import { bodyErrors, REPORTS_BODY_ERRORS } from '../http/body-validation';
import { requireObjectBody } from '../problems/validation';
import { pageLinks, type PageQuery } from '../http/paging';
import { invalidField, problem } from '../problems/problem-detail';
import { pointerToken } from '../lib/ill-formed-text';
import { ProblemError } from '../problems/problem-error';
import type { TaskSubscriber } from '../tasks/task-submission';
import { taskRepresentation } from '../tasks/task-representation';
import { isFinal, type TaskSnapshot } from '../tasks/task-snapshot';
import type { TaskStore } from '../tasks/task-store';
import { checkCallbackUrl, type Lookup } from './callback-url-policy';
import type { DeliveryHistory } from './delivery-attempt';
import type { Subscription, TaskEventPosition } from './subscription';
import { newSubscriptionRepresentation, subscriptionRepresentation } from './subscription-representation';
import { subscriptionRouteSchemas, subscriptionSchema, type NewSubscriptionBody } from './subscription-schemas';
import type { SubscriptionStore } from './subscription-store';

export interface SubscriptionRouteDeps {
  store: SubscriptionStore;
  /** every subscription's recent callback attempts */
  history: DeliveryHistory;
  tasks: TaskStore;
  /** every event kind the API publishes, the ones `events` may name */
  eventKinds: string[];
  allowPrivate: boolean;
  /** how callback host names are resolved; the system's resolver unless a test gives one */
  lookup?: Lookup;
  /** Idempotency-Key state; without it the header is ignored */
  idempotency?: IdempotencyKeys;
  /** where a task's events are read: a subscription to a task whose first ones Kafka deleted is refused */
  reader: Pick<PartitionReader, 'startOffset'>;
  /** KAFKA_TIMEOUT_MS: the bound on asking Kafka where a task's partition starts */
  kafkaTimeoutMs: number;
}

type IdParams = { Params: { id: string } };

/**
 * Spec: a rejected subscription is 403 with a Problem; here one errors[] entry names /callbackUrl. A URL whose host
 * could not be resolved for now is not rejected but unchecked: 503, to be sent again.
 */
async function assertCallbackAllowed(callbackUrl: string, allowPrivate: boolean, lookup?: Lookup): Promise<void> {
  const verdict = await checkCallbackUrl(callbackUrl, { allowPrivate, lookup });
  if (!verdict.ok && verdict.transient) {
    throw new ProblemError('callback-url-unverified', `The callbackUrl's ${verdict.reason}; try again.`, {
      headers: { 'retry-after': '5' },
    });
  }
  if (!verdict.ok) {
    throw new ProblemError('subscription-rejected', `The callbackUrl ${verdict.reason}.`, {
      errors: [problem('invalid-field', `/callbackUrl ${verdict.reason}`, { instance: '/callbackUrl', status: 403 })],
    });
  }
}

/** The subscriber behind POST /tasks's callbackUrl: a once-or-continuous subscription to that task. */
export function taskSubscriber(deps: SubscriptionRouteDeps): TaskSubscriber {
  return {
    async prepare(tenant, callbackUrl, mode) {
      await assertCallbackAllowed(callbackUrl, deps.allowPrivate, deps.lookup);
      const id = randomUUID();
      // One draft per task, so the secret the 202 shows is the one written with the task.
      let drafted: ReturnType<SubscriptionStore['draft']> | undefined;
      return {
        id,
        records(taskId) {
          if (drafted?.subscription.taskId !== taskId) {
            drafted = deps.store.draft({ tenant, callbackUrl, mode, taskId }, id);
          }
          return [drafted.record];
        },
        created: () => drafted && newSubscriptionRepresentation(drafted.subscription),
        written: (records) => deps.store.view.applyWritten(records),
      };
    },
  };
}

/**
 * A subscription to a task gets its events from the first one: once the topic's retention deleted that one, the
 * promise cannot be kept, and the subscription is refused (410, as a page of the deleted events is) rather than made
 * to skip them in silence, or, when the final event is gone too, to stay active for ever waiting for it.
 */
async function assertEventsKept(from: TaskEventPosition, deps: SubscriptionRouteDeps): Promise<void> {
  const start = BigInt(await deps.reader.startOffset(from.topic, from.partition, deps.kafkaTimeoutMs));
  if (BigInt(from.offset) >= start) return;
  const detail =
    `Kafka has deleted this task's events before offset ${start} of ${from.topic}/${from.partition} (the topic's ` +
    `retention), its first at ${from.offset}: a subscription could not get them. GET the task for its outcome.`;
  throw new ProblemError('task-events-deleted', detail);
}

/**
 * Where a task subscribed to over HTTP is owed its events from: its first event. A subscription to a task wants the
 * task's events whenever it is made, also those written before it (see SubscriptionStore's owed events).
 */
function taskEventsFrom(task: TaskSnapshot): TaskEventPosition | undefined {
  if (task.partition < 0 || task.offset < 0) return undefined;
  return { topic: task.topic, partition: task.partition, offset: String(task.offset) };
}

export async function subscriptionRoutes(app: FastifyInstance, deps: SubscriptionRouteDeps): Promise<void> {
  const { store, history } = deps;
  const schemas = subscriptionRouteSchemas(deps.eventKinds);
  app.addSchema(subscriptionSchema);

  function own(tenant: string, id: string): Subscription {
    const s = store.get(id);
    if (!s || s.tenant !== tenant)
      throw new ProblemError('not-found', `There is no subscription ${JSON.stringify(id)}.`);
    return s;
  }

  // The task embeds without its own subscription (this one): a link back is enough.
  const taskOf = (s: Subscription) => () => {
    const t = s.taskId === undefined ? undefined : deps.tasks.get(s.taskId);
    if (!t || t.tenant !== s.tenant) return undefined;
    return taskRepresentation(t, {
      cancelRequested: deps.tasks.cancelRequested(t.taskId),
      retentionMs: deps.tasks.retentionMs,
    });
  };
  const representation = (s: Subscription) =>
    subscriptionRepresentation(s, history.of(s.id), { expiresAt: store.expiresAt(s), task: taskOf(s) });

  app.post('/subscriptions', { schema: schemas.create, ...REPORTS_BODY_ERRORS }, async (request, reply) => {
    const errors = bodyErrors(request);
    // Typed from its schema; its fields are read only once the schema found no errors.
    const body = request.body as NewSubscriptionBody;
    if ((body.taskId === undefined) === (body.events === undefined)) {
      errors.push(
        problem('invalid-field', '/taskId or /events: give exactly one of them', {
          instance: body.taskId === undefined ? '/events' : '/taskId',
        }),
      );
    }
    if (errors.length > 0)
      throw new ProblemError('validation-failed', 'Give callbackUrl, mode, and either taskId or events; see errors.', {
        errors,
      });
    const tenant = tenantOf(request);
    const taskId = body.taskId === undefined ? undefined : canonicalId(body.taskId);
    const task = taskId === undefined ? undefined : deps.tasks.get(taskId);
    if (taskId !== undefined && (!task || task.tenant !== tenant)) {
      throw new ProblemError('validation-failed', 'The task to subscribe to does not exist.', {
        errors: [problem('invalid-field', `/taskId names no task of yours`, { instance: '/taskId' })],
      });
    }
    await assertCallbackAllowed(body.callbackUrl, deps.allowPrivate, deps.lookup);
    const created = await idempotently<Subscription>(request, reply, deps.idempotency, {
      // The store chooses the id; its write is the subscription's one record, keyed by it.
      describe: (records) => ({ status: 201, ids: records.slice(0, 1).map((r) => r.key) }),
      replay: (answer) => {
        const s = store.get(answer.ids[0]);
        if (!s) {
          const detail = `The subscription this Idempotency-Key created (${answer.ids[0]}) no longer exists.`;
          throw new ProblemError('not-found', detail);
        }
        return s;
      },
      create: async (keyed) => {
        const from = task && taskEventsFrom(task);
        // Here, not before: a repeated Idempotency-Key gets the answer the first request got.
        if (from) await assertEventsKept(from, deps);
        return store.create(
          { tenant, callbackUrl: body.callbackUrl, mode: body.mode, taskId, taskEventsFrom: from, events: body.events },
          keyed,
        );
      },
    });
    // A repeat shows the secret again: it is the same answer, to the same tenant holding the same key.
    const rep = newSubscriptionRepresentation(created, taskOf(created));
    if (task && isFinal(task.status)) {
      rep.message = `${String(rep.message)} The task has already finished (${task.status}); its outcome is sent all the same.`;
    }
    return reply.code(201).header('location', `/subscriptions/${created.id}`).send(rep);
  });

  app.get<{ Querystring: PageQuery }>('/subscriptions', { schema: schemas.list }, async (request) => {
    const all = store.list(tenantOf(request));
    const { offset, limit } = request.query;
    const page = all.slice(offset, offset + limit);
    await Promise.all(page.map((s) => history.explaining(s)));
    return halResource(
      { count: page.length, total: all.length },
      {
        ...pageLinks('/subscriptions', offset, limit, all.length),
        item: page.map((s) => link(`/subscriptions/${s.id}`)),
      },
      { subscriptions: () => page.map(representation) },
      ['subscriptions'],
    );
  });

  app.get<IdParams>('/subscriptions/:id', { schema: schemas.get }, async (request) => {
    const s = own(tenantOf(request), request.params.id);
    await history.explaining(s);
    return representation(s);
  });

  type DeliveriesRequest = IdParams & { Querystring: PageQuery };
  app.get<DeliveriesRequest>('/subscriptions/:id/deliveries', { schema: schemas.deliveries }, async (request) => {
    const s = own(tenantOf(request), request.params.id);
    await history.explaining(s);
    const all = history.of(s.id);
    const { offset, limit } = request.query;
    const path = `/subscriptions/${s.id}/deliveries`;
    return halResource(
      {
        count: Math.min(limit, Math.max(0, all.length - offset)),
        total: all.length,
        attempts: all.slice(offset, offset + limit),
      },
      { ...pageLinks(path, offset, limit, all.length), subscription: link(`/subscriptions/${s.id}`) },
    );
  });

  // Spec: cancel is a PUT on the subscription resource → 202; repeatable. A body naming another UUID is refused.
  const cancelOptions = { schema: schemas.cancel, ...REPORTS_BODY_ERRORS };
  app.put<IdParams>('/subscriptions/:id', cancelOptions, async (request, reply) => {
    const s = own(tenantOf(request), request.params.id);
    evaluatePreconditions(request);
    // The schema allows any object (or none), so what it finds is a body that is no JSON object: the usual 400.
    bodyErrors(request);
    // No body (none, or an empty one) is a cancel. JSON null is a body, and no object: Fastify validates a missing
    // body as null, so the schema lets both through, and null is refused here as 0 or [] are.
    if (request.body !== undefined) cancelBodyRefusal(requireObjectBody(request.body), s.id);
    // The answer is the resource as GET now shows it, so `fields` and `embedded` select from it as they do there.
    const cancelled = await store.cancel(s, 'requested');
    await history.explaining(cancelled);
    return reply.code(202).send(representation(cancelled));
  });
}

/**
 * A cancel's body names the subscription (`UUID`, compared as UUIDs are, without case) and may say
 * `"status": "cancelled"`; nothing else. A client that PUTs back a changed representation means an update, which
 * this PUT is not: cancelling instead would lose its subscription (README "Callbacks").
 */
function cancelBodyRefusal(body: object, id: string): void {
  const { UUID, status, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest).map((k) =>
    invalidField(`/${pointerToken(k)}`, 'is not part of a cancel, whose body is optional: {"UUID": "<this one>"}'),
  );
  if (status !== undefined && status !== 'cancelled') {
    unknown.push(invalidField('/status', 'must be "cancelled" when given: a PUT here only cancels'));
  }
  if (UUID !== undefined && typeof UUID !== 'string') unknown.push(invalidField('/UUID', 'must be a string'));
  if (unknown.length > 0) {
    throw new ProblemError('validation-failed', 'A cancel names the subscription and nothing else.', {
      errors: unknown,
    });
  }
  if (typeof UUID === 'string' && UUID.toLowerCase() !== id.toLowerCase()) {
    throw new ProblemError('uuid-mismatch', 'The body names another subscription than the path.', {
      errors: [
        problem('invalid-field', '/UUID does not match the subscription in the path', {
          instance: '/UUID',
          status: 403,
        }),
      ],
    });
  }
}

/**
 * How the task routes show a task's subscription: embedded (`?embedded=subscription`), as its creating answer showed
 * it (secret included, for a repeated keyed POST), and once it shows what ended it (DeliveryHistory.explaining).
 */
export function taskSubscriptionViews({ store, history }: Pick<SubscriptionRouteDeps, 'store' | 'history'>) {
  return {
    subscriptionOf: (id: string) => {
      const s = store.get(id);
      return s && subscriptionRepresentation(s, history.of(id), { expiresAt: store.expiresAt(s) });
    },
    createdSubscriptionOf: (id: string) => {
      const s = store.get(id);
      return s && newSubscriptionRepresentation(s);
    },
    subscriptionExplained: (id: string) => {
      const s = store.get(id);
      return s && history.explaining(s);
    },
  };
}
