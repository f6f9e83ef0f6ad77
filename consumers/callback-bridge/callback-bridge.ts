import { createHash } from 'node:crypto';
import type { ConsumerHandle, GroupConsumerOptions, IncomingRecord, Publisher } from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import { wants, type EventForMatching, type Subscription } from '../../src/subscriptions/subscription';
import { DeliveryLane, type CallbackParts, type LaneDeps } from './delivery-lanes';
import { createCallbackAgent } from './send-callback';

export interface CallbackBridgeDeps extends Omit<LaneDeps, 'agent'> {
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  publisher: Publisher;
  topics: LaneDeps['topics'] & { taskEvents: string; domainEvents: string };
  groupId: string;
  allowPrivate: boolean;
  /** events held at once, delivering or waiting in their lanes */
  concurrency: number;
  /** base of the absolute links in callback bodies (PUBLIC_URL); relative links without it */
  publicUrl?: () => string;
}

/** The same event to the same subscription always has the same webhook-id, across retries and redeliveries. */
export function webhookId(subscriptionId: string, eventId: string): string {
  return `msg_${createHash('sha256').update(`${subscriptionId}\u0000${eventId}`).digest('base64url').slice(0, 27)}`;
}

interface ParsedEvent extends EventForMatching {
  id: string;
  data: unknown;
  resource?: string;
}

function parse(record: IncomingRecord, taskEventsTopic: string): ParsedEvent | undefined {
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
  return { kind, id, time, data: value.data, resource: typeof value.resource === 'string' ? value.resource : undefined };
}

/** A receiver follows the links, so they are absolute: the api's public base URL and the API path. */
function body(sub: Subscription, e: ParsedEvent, base: string): string {
  const links: Record<string, { href: string }> = { self: { href: `${base}/subscriptions/${sub.id}` } };
  if (e.taskId) links.task = { href: `${base}/tasks/${e.taskId}` };
  if (e.resource) links.resource = { href: `${base}${e.resource}` };
  return JSON.stringify({ _links: links, UUID: sub.id, event: e.kind, ...(e.taskId ? { taskId: e.taskId } : {}), data: e.data });
}

/**
 * The callback bridge: a consumer group on the event topics that turns each
 * event into callbacks for the subscriptions that want it. An event's offset
 * is committed only once each of its callbacks is delivered, refused, gone or
 * dead-lettered (see DeliveryLane); a failed Kafka step is retried in place,
 * never skipped.
 */
export async function startCallbackBridge(deps: CallbackBridgeDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'callback-bridge' });
  const agent = createCallbackAgent(deps.allowPrivate);
  const lanes = new Map<string, DeliveryLane>();
  const laneDeps: LaneDeps = { ...deps, agent, logger };
  /**
   * One lane per subscription in this process: its callbacks go one at a time,
   * in the order they were admitted. Admission is in offset order per
   * partition, and all of a task's events are in one partition.
   */
  const lane = (subscriptionId: string) => {
    let l = lanes.get(subscriptionId);
    if (!l) {
      const created = new DeliveryLane(subscriptionId, laneDeps, () => { if (created.idle) lanes.delete(subscriptionId); });
      lanes.set(subscriptionId, (l = created));
    }
    return l;
  };

  /** Matches an event, syncing the subscriptions view first; retried in place so later events of the partition wait. */
  async function matching(e: ParsedEvent, receivedAt: number, signal: AbortSignal): Promise<Subscription[] | undefined> {
    for (let failures = 1; !signal.aborted; failures += 1) {
      try {
        // Everything committed before the event is applied: a subscription made just before it (or with it, in the
        // same transaction as a task's first event) is matched.
        // +1: a sync begun in the same millisecond may have read the end offsets before the commit.
        await deps.subscriptions.view.syncedSince(receivedAt + 1, deps.kafkaTimeoutMs);
        return [...deps.subscriptions.view.values()].filter((s) => wants(s, e));
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 100, 5000);
        logger.warn({ err, retryInMs }, 'could not sync the subscriptions view; trying again');
        await pause(retryInMs, signal);
      }
    }
    return undefined;
  }

  /**
   * Events of one partition enter their lanes in offset order, which is what
   * keeps one subscription's callbacks in order; only the deliveries of
   * different lanes run side by side.
   */
  const admissions = new Map<string, Promise<unknown>>();
  function onEvent(record: IncomingRecord, signal: AbortSignal): Promise<void> {
    const key = `${record.topic}\u0000${record.partition}`;
    const admitted = (admissions.get(key) ?? Promise.resolve()).then(() => admit(record, signal));
    const tail = admitted.catch(() => undefined);
    admissions.set(key, tail);
    void tail.then(() => { if (admissions.get(key) === tail) admissions.delete(key); });
    return admitted.then((deliveries) => Promise.all(deliveries)).then(() => undefined);
  }

  async function admit(record: IncomingRecord, signal: AbortSignal): Promise<Promise<void>[]> {
    const e = parse(record, deps.topics.taskEvents);
    if (!e) {
      logger.warn({ topic: record.topic, partition: record.partition, offset: record.offset }, 'an event that is not JSON with a type matches nothing');
      return [];
    }
    const subscriptions = (await matching(e, record.receivedAt ?? Date.now(), signal)) ?? [];
    const base = deps.publicUrl?.() ?? '';
    return subscriptions.map((sub) => {
      const parts: CallbackParts = {
        subscriptionId: sub.id, webhookId: webhookId(sub.id, e.id), event: e.kind, ...(e.taskId ? { taskId: e.taskId } : {}),
        body: body(sub, e, base), ...(record.headers.traceparent ? { traceparent: record.headers.traceparent } : {}),
      };
      return lane(sub.id).enqueue(parts, signal);
    });
  }

  const events = await deps.runGroupConsumer({
    groupId: deps.groupId, topics: [deps.topics.taskEvents, deps.topics.domainEvents], maxInFlight: deps.concurrency, handle: onEvent,
  });
  return {
    async stop() {
      await events.stop();
      await agent.close().catch(() => undefined);
    },
  };
}
