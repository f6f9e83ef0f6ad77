import { createHash } from 'node:crypto';
import type { ConsumerHandle, GroupConsumerOptions, IncomingRecord, Publisher, StateView } from '../../src/kafka/types';
import { wants, type EventForMatching, type Subscription } from '../../src/subscriptions/subscription';
import { isSnapshot, type TaskRecord } from '../../src/tasks/task-snapshot';
import { DeliveryLane, type CallbackParts, type LaneDeps, type ParkedCallback } from './delivery-lanes';
import { createCallbackAgent } from './send-callback';

export interface CallbackBridgeDeps extends Omit<LaneDeps, 'agent'> {
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  publisher: Publisher;
  tasks: StateView<TaskRecord>;
  topics: LaneDeps['topics'] & { taskEvents: string; domainEvents: string };
  groupId: string;
  allowPrivate: boolean;
  concurrency: number;
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
  if (record.topic === taskEventsTopic) return { kind, id, time, taskId: record.key ?? undefined, data: value.data };
  return { kind, id, time, data: value.data, resource: typeof value.resource === 'string' ? value.resource : undefined };
}

/**
 * The callback bridge: a consumer group on the event topics that turns each
 * event into callbacks for the subscriptions that want it, and a second group
 * on the retry topic for callbacks that failed. An event's offset is committed
 * once each of its callbacks is delivered, refused, or parked for retry.
 */
export async function startCallbackBridge(deps: CallbackBridgeDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'callback-bridge' });
  const agent = createCallbackAgent(deps.allowPrivate);
  const stopping = new AbortController();
  const lanes = new Map<string, DeliveryLane>();
  const lane = (id: string) => {
    let l = lanes.get(id);
    if (!l) lanes.set(id, (l = new DeliveryLane(id, { ...deps, agent, logger }, stopping.signal)));
    return l;
  };

  function body(sub: Subscription, e: ParsedEvent): string {
    const links: Record<string, { href: string }> = { self: { href: `/subscriptions/${sub.id}` } };
    if (e.taskId) links.task = { href: `/tasks/${e.taskId}` };
    if (e.resource) links.resource = { href: e.resource };
    return JSON.stringify({ _links: links, UUID: sub.id, event: e.kind, ...(e.taskId ? { taskId: e.taskId } : {}), data: e.data });
  }

  /**
   * Events of one partition enter their subscriptions' lanes in offset order,
   * which is what keeps one subscription's callbacks in order; only the
   * deliveries themselves run concurrently.
   */
  const admissions = new Map<string, Promise<unknown>>();
  async function onEvent(record: IncomingRecord): Promise<void> {
    const key = `${record.topic}\u0000${record.partition}`;
    const admitted = (admissions.get(key) ?? Promise.resolve()).then(() => admit(record));
    admissions.set(key, admitted.catch(() => undefined));
    await Promise.all(await admitted);
  }

  async function admit(record: IncomingRecord): Promise<Promise<void>[]> {
    const e = parse(record, deps.topics.taskEvents);
    if (!e) {
      logger.warn({ topic: record.topic, offset: record.offset }, 'skipping an event that is not JSON with a type');
      return [];
    }
    // Everything written before the event is applied: a subscription made just before it is matched.
    await deps.subscriptions.syncedSince(e.time, deps.kafkaTimeoutMs);
    if (e.taskId) {
      await deps.tasks.syncedSince(e.time, deps.kafkaTimeoutMs);
      const task = deps.tasks.get(e.taskId);
      e.tenant = isSnapshot(task) ? task.tenant : '\u0000unknown';
    }
    const matching = [...deps.subscriptions.values()].filter((s) => wants(s, e));
    return matching.map((sub) => {
      const parts: CallbackParts = { subscriptionId: sub.id, webhookId: webhookId(sub.id, e.id), event: e.kind, ...(e.taskId ? { taskId: e.taskId } : {}), body: body(sub, e) };
      return lane(sub.id).fresh(parts);
    });
  }

  async function onRetry(record: IncomingRecord): Promise<void> {
    let parked: ParkedCallback;
    try {
      parked = JSON.parse(record.value ?? 'null') as ParkedCallback;
      if (!parked?.message?.subscriptionId) throw new Error('no message');
    } catch {
      logger.warn({ offset: record.offset }, 'skipping an unreadable parked callback');
      return;
    }
    await lane(parked.message.subscriptionId).retry(parked);
  }

  const events = await deps.runGroupConsumer({
    groupId: deps.groupId, topics: [deps.topics.taskEvents, deps.topics.domainEvents], maxInFlight: deps.concurrency, handle: (r) => onEvent(r),
  });
  // Parked callbacks mostly wait for their due time; many can wait at once without holding anything else up.
  const retries = await deps.runGroupConsumer({
    groupId: `${deps.groupId}.retries`, topics: [deps.topics.callbackRetries], maxInFlight: 10000, handle: (r) => onRetry(r),
  });

  return {
    async stop() {
      stopping.abort();
      await Promise.all([events.stop(), retries.stop()]);
      await agent.close().catch(() => undefined);
    },
  };
}
