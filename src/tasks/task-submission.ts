import type { FastifyReply, FastifyRequest } from 'fastify';
import { v4 as uuidv4 } from 'uuid';
import { tenantOf } from '../http/auth';
import { bodyErrors } from '../http/body-validation';
import type { HalResource } from '../http/hal';
import { idempotently } from '../http/idempotency';
import type { IdempotencyKeys } from '../idempotency/idempotency-keys';
import type { OutgoingRecord, WrittenRecord } from '../kafka/types';
import { problem, type ProblemDetail } from '../problems/problem-detail';
import { ProblemError } from '../problems/problem-error';
import type { TaskRegistry } from './task-registry';
import type { TaskSubmission } from './task-schemas';
import type { TaskSnapshot } from './task-snapshot';
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

export interface SubmissionDeps {
  registry: TaskRegistry;
  store: TaskStore;
  subscriber?: TaskSubscriber;
  /** a subscription as its creating answer showed it, secret included: a repeated keyed POST shows it again */
  createdSubscriptionOf?: (id: string) => HalResource | undefined;
  /** Idempotency-Key state; without it the header is ignored */
  idempotency?: IdempotencyKeys;
}

/** An accepted task, and the subscription its callbackUrl made (shown with its secret in the 202). */
export interface Accepted {
  task: TaskSnapshot;
  created?: HalResource;
}

/**
 * `POST /tasks`: validates the submission, then writes the task (and the subscription its callbackUrl asks for) in
 * one transaction, or, for a repeated Idempotency-Key, finds what the first request made.
 */
export async function submitTask(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: SubmissionDeps,
): Promise<Accepted> {
  const errors: ProblemDetail[] = bodyErrors(request);
  // Typed from its schema; read only once the schema found no errors.
  const body = request.body as TaskSubmission;
  if (errors.length === 0) errors.push(...deps.registry.inputErrors(body.type, body.input));
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
  return idempotently<Accepted>(request, reply, deps.idempotency, {
    describe: (records) => ({
      status: 202,
      ids: [taskId, ...(subscription ? [subscription.id] : [])],
      createdAt: createdAtIn(records, taskId),
    }),
    replay: (answer, answeredAt) => {
      const found = deps.store.get(answer.ids[0]);
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
      const task = await deps.store.submit({
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
}

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
