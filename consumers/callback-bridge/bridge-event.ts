import { createHash, hash } from 'node:crypto';
import type { IncomingRecord } from '../../src/kafka/types';
import type { EventForMatching, Subscription } from '../../src/subscriptions/subscription';

/** An event record as the bridge reads it: what subscriptions are matched against, and what callbacks carry. */
export interface BridgeEvent extends EventForMatching {
  id: string;
  data: unknown;
  resource?: string;
}

/** One call and no Hash object (half the time of createHash); createHash on a Node without crypto.hash (< 20.12). */
const sha256: (text: string) => string =
  typeof hash === 'function'
    ? (text) => hash('sha256', text, 'base64url')
    : (text) => createHash('sha256').update(text).digest('base64url');

/** The same event to the same subscription always has the same webhook-id, across retries and redeliveries. */
export function webhookId(subscriptionId: string, eventId: string): string {
  return `msg_${sha256(`${subscriptionId}\u0000${eventId}`).slice(0, 27)}`;
}

/** An event from a task-events or domain-events record; undefined for a record that is not JSON with a type. */
export function parseEvent(record: IncomingRecord, taskEventsTopic: string): BridgeEvent | undefined {
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(record.value ?? 'null');
  } catch {
    return undefined;
  }
  const kind = record.headers.ce_type ?? (typeof value?.event === 'string' ? value.event : undefined);
  if (!kind || !value) return undefined;
  const id = record.headers.ce_id ?? `${record.topic}/${record.partition}/${record.offset}`;
  const time = Number(record.timestamp);
  if (record.topic === taskEventsTopic) {
    // A task event without a tenant (written by hand) matches no tenant's subscription.
    const tenant = record.headers.ce_tenant ?? '\u0000unknown';
    return { kind, id, time, taskId: record.key ?? undefined, tenant, data: value.data };
  }
  return {
    kind,
    id,
    time,
    data: value.data,
    resource: typeof value.resource === 'string' ? value.resource : undefined,
  };
}

/** The callback's body. A receiver follows the links, so they are absolute: the api's public base URL and the path. */
export function callbackBody(sub: Subscription, e: BridgeEvent, base: string): string {
  const links: Record<string, { href: string }> = { self: { href: `${base}/subscriptions/${sub.id}` } };
  if (e.taskId) links.task = { href: `${base}/tasks/${e.taskId}` };
  if (e.resource) links.resource = { href: `${base}${e.resource}` };
  const task = e.taskId ? { taskId: e.taskId } : {};
  return JSON.stringify({ _links: links, UUID: sub.id, event: e.kind, ...task, data: e.data });
}
