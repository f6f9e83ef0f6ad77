import { halResource, link, type EmbedResolver, type HalResource, type Links } from '../http/hal';
import { isFinal, type TaskSnapshot } from './task-snapshot';
import { expiresAt } from './task-store';

const MESSAGES: Record<TaskSnapshot['status'], string> = {
  accepted: 'The task is accepted and waits for a runner.',
  running: 'The task is running.',
  succeeded: 'The task succeeded; see result.',
  failed: 'The task failed; see problem.',
  cancelled: 'The task was cancelled.',
};

const SECRET_NOTE =
  ' Keep _embedded.subscription.secret: it signs the callbacks (Standard Webhooks) ' + 'and is shown only now.';

export interface TaskRepresentationOptions {
  cancelRequested?: boolean;
  subscriptionOf?: (id: string) => HalResource | undefined;
  /** the subscription this very request made, with its secret: embedded by default */
  created?: HalResource;
  /** when a finished task is forgotten (TASK_RETENTION_MS): it says so in `expiresAt` */
  retentionMs?: number;
}

/**
 * The task-tracking resource: where the task's events are, and its state; its subscription embeds on
 * request. A finished one says until when it can be read (`expiresAt`), as a client must fetch its result by then.
 */
export function taskRepresentation(t: TaskSnapshot, options: TaskRepresentationOptions = {}): HalResource {
  const { cancelRequested = false, subscriptionOf, created, retentionMs } = options;
  const expires = retentionMs === undefined ? undefined : expiresAt(t, retentionMs);
  const embeddable: Record<string, EmbedResolver> = {};
  if (created) embeddable.subscription = () => created;
  else if (t.subscription && subscriptionOf) embeddable.subscription = () => subscriptionOf(t.subscription as string);
  // `events`: the task's events over HTTP (pages or SSE), from the same offsets a Kafka client reads.
  const links: Links = {
    self: link(`/tasks/${t.taskId}`),
    collection: link('/tasks'),
    events: link(`/tasks/${t.taskId}/events`),
  };
  if (t.subscription) links.subscription = link(`/subscriptions/${t.subscription}`);
  const pendingCancel = cancelRequested && !isFinal(t.status);
  // Optional members are set in place, in the order the representation lists them: a spread of a conditional
  // object literal per member built and copied up to seven objects on every read of a task.
  const fields: Record<string, unknown> = {
    UUID: t.taskId,
    taskId: t.taskId,
    type: t.type,
    status: t.status,
    message:
      `${pendingCancel ? 'Cancellation requested. ' : ''}${MESSAGES[t.status]} ` +
      `Events: topic ${t.topic}, key ${t.taskId}, from partition ${t.partition} offset ${t.offset}.` +
      (created ? SECRET_NOTE : ''),
    topic: t.topic,
    key: t.taskId,
    partition: t.partition,
    offset: t.offset,
    attempt: t.attempt,
  };
  if (pendingCancel) fields.cancelRequested = true;
  if (t.progress) fields.progress = t.progress;
  if (t.result !== undefined) fields.result = t.result;
  if (t.problem) fields.problem = t.problem;
  fields.createdAt = t.createdAt;
  if (t.startedAt) fields.startedAt = t.startedAt;
  if (t.finishedAt) fields.finishedAt = t.finishedAt;
  if (expires !== undefined) fields.expiresAt = new Date(expires).toISOString();
  fields.updatedAt = t.updatedAt;
  return halResource(fields, links, embeddable, created ? ['subscription'] : []);
}
