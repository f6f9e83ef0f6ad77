import { halResource, link, type HalResource, type Links } from '../http/hal';
import type { DeliveryAttempt } from './delivery-attempt';
import type { Subscription } from './subscription';

const MESSAGES = {
  active: 'The subscription is active.',
  cancelled: 'The subscription is cancelled; no further callbacks start.',
};

export interface RepresentationExtras {
  /** only in the answer that creates it */
  secret?: boolean;
  /** when a cancelled subscription is forgotten (SubscriptionStore.expiresAt), ms since epoch */
  expiresAt?: number;
  /** a task subscription's task, embedded on request (`embedded=task`) */
  task?: () => HalResource | undefined;
}

/** The subscription resource; the secret is shown once, in the 201 that creates it. */
export function subscriptionRepresentation(
  s: Subscription,
  attempts: DeliveryAttempt[],
  extras: RepresentationExtras = {},
): HalResource {
  const links: Links = {
    self: link(`/subscriptions/${s.id}`),
    deliveries: link(`/subscriptions/${s.id}/deliveries`),
    collection: link('/subscriptions'),
  };
  if (s.taskId) links.task = link(`/tasks/${s.taskId}`);
  const count = (o: DeliveryAttempt['outcome']) => attempts.filter((a) => a.outcome === o).length;
  const last = attempts.at(-1);
  return halResource(
    {
      UUID: s.id,
      message: MESSAGES[s.status],
      status: s.status,
      ...(s.cancelReason ? { cancelReason: s.cancelReason } : {}),
      mode: s.mode,
      callbackUrl: s.callbackUrl,
      ...(s.taskId ? { taskId: s.taskId } : { events: s.events }),
      ...(extras.secret ? { secret: s.secret } : {}),
      counts: {
        // A dead letter's record follows the last attempt; it is not one.
        attempts: attempts.length - count('dead-lettered'),
        delivered: count('delivered'),
        failed: count('failed'),
        deadLettered: count('dead-lettered'),
        refused: count('refused'),
        gone: count('gone'),
      },
      ...(last ? { lastDelivery: last } : {}),
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      ...(extras.expiresAt !== undefined ? { expiresAt: new Date(extras.expiresAt).toISOString() } : {}),
    },
    links,
    s.taskId && extras.task ? { task: extras.task } : undefined,
  );
}

/** The answer that creates a subscription (201, or a task's 202): the only time its secret is shown. */
export function newSubscriptionRepresentation(s: Subscription, task?: RepresentationExtras['task']): HalResource {
  const rep = subscriptionRepresentation(s, [], { secret: true, task });
  rep.message =
    'Subscription created. Keep the secret: it signs every callback (Standard Webhooks) ' + 'and is shown only now.';
  // A repeat of the creating request (Idempotency-Key) shows the subscription as it is now, which may have ended.
  if (s.status !== 'active') rep.message = `${rep.message} It has ended since (${s.cancelReason ?? s.status}).`;
  return rep;
}
