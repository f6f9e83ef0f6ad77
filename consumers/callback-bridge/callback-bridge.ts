import type {
  ConsumerHandle,
  GroupConsumerOptions,
  IncomingRecord,
  PartitionReader,
  Publisher,
  StateView,
} from '../../src/kafka/types';
import { MembershipLease } from '../../src/kafka/membership-lease';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import { KeyedSerial } from '../../src/lib/keyed-serial';
import type { Logger } from '../../src/logger';
import { CallbackFailureLog } from './callback-failure-log';
import type { BacklogLag, ServiceMetrics } from '../../src/metrics/metrics';
import { wants, type Subscription } from '../../src/subscriptions/subscription';
import { callbackBody, parseEvent, webhookId, type BridgeEvent } from './bridge-event';
import { DeliveryLane, type LaneDeps } from './delivery-lanes';
import type { CallbackParts } from './lane-job';
import type { BacklogCursor } from '../../src/subscriptions/backlog-cursor';
import { LaneSources, type HoldCommit } from './lane-sources';
import { AttemptRecorder } from './attempt-recorder';
import { createCallbackAgent } from './send-callback';
import { decidedByOneBridge, handsOn, parseOnceCallback } from './once-callbacks';

/**
 * How often, at most, the attempt records of all lanes are written (AttemptRecorder): what it adds is only to when an
 * event is committed, never to when its callback is sent.
 */
const HISTORY_LINGER_MS = 50;

/**
 * The share of CALLBACK_CONCURRENCY that waiting callbacks may take before every lane keeps to its buffer
 * (BridgeWaiting): a burst to one healthy subscription is delivered from memory, and a slow one still leaves a tenth
 * of the budget to the others.
 */
const SPARE_SHARE = 0.9;

export interface CallbackBridgeDeps extends Omit<LaneDeps, 'agent' | 'history'> {
  runGroupConsumer(options: GroupConsumerOptions): Promise<ConsumerHandle>;
  /** where lane backlogs are read again from (lane-backlog.ts) */
  reader: PartitionReader;
  /** where lane backlogs stand (backlog-cursors.ts): a partition taken over reads on from them */
  cursors: StateView<BacklogCursor>;
  publisher: Publisher;
  topics: LaneDeps['topics'] & { taskEvents: string; domainEvents: string; callbackBacklogs: string };
  groupId: string;
  allowPrivate: boolean;
  /** events held at once, delivering or waiting in their lanes */
  concurrency: number;
  /** base of the absolute links in callback bodies (PUBLIC_URL); relative links without it */
  publicUrl?: () => string;
  metrics?: Pick<ServiceMetrics, 'callbackAttempt' | 'watchCallbackBacklogs'>;
}

/**
 * Turns each event into callbacks for the subscriptions that want it. Events of one partition enter their lanes in
 * offset order (admitted one after another per partition), which is what keeps one subscription's callbacks in
 * order; only the deliveries of different lanes run side by side. A lane holds a bounded number of callbacks in
 * memory; what it has no room for is read again from Kafka later (LaneSources), so one dead or slow endpoint never
 * holds the events of the others.
 */
export class CallbackBridge {
  private readonly lanes = new Map<string, DeliveryLane>();
  /** per topic-partition: admission in offset order */
  private readonly admission = new KeyedSerial();
  private readonly sources: LaneSources;
  private readonly laneDeps: LaneDeps;

  constructor(
    private readonly deps: CallbackBridgeDeps,
    agent: LaneDeps['agent'],
    private readonly logger: Logger,
  ) {
    const history = new AttemptRecorder(deps.publisher, HISTORY_LINGER_MS);
    const waiting = { count: 0, spare: Math.floor(deps.concurrency * SPARE_SHARE) };
    const failureLog = new CallbackFailureLog(logger);
    const ownedSince = (partition: string) => this.sources.ownedSince(partition);
    this.laneDeps = { ...deps, agent, logger, history, waiting, failureLog, ownedSince };
    this.sources = new LaneSources({
      ...deps,
      logger,
      lane: (id) => this.lane(id),
      callbackParts: (sub, e, record) => this.callbackParts(sub, e, record),
    });
    // Whoever ended it (this bridge after a delivery, a refusal, or a client's cancel through the api).
    deps.subscriptions.view.onChange((id, s) => {
      if (!s || s.status !== 'active') this.sources.subscriptionEnded(id);
      else if (s.taskEventsFrom) this.sources.owed(s, s.taskEventsFrom);
    });
  }

  /**
   * Resolves once every callback of the event is done (delivered, refused, gone or dead-lettered), or passed to a
   * backlog that answers for it from then on.
   */
  async onEvent(record: IncomingRecord, signal: AbortSignal, holdCommit: HoldCommit): Promise<void> {
    const partition = `${record.topic}\u0000${record.partition}`;
    const deliveries = await this.admission.run(partition, () => this.admit(record, signal, holdCommit));
    // Mostly one subscription wants the event: then no Promise.all.
    if (deliveries.length === 1) await deliveries[0];
    else await Promise.all(deliveries);
  }

  /** The partition is this member's from `resumeAt` on (GroupConsumerOptions.onAssigned): its backlogs resume now. */
  assigned(topic: string, partition: number, signal: AbortSignal, resumeAt: bigint): void {
    this.sources.assigned(topic, partition, signal, resumeAt);
  }

  /** what each subscription's backlogs have still to read from Kafka, per partition */
  backlogs(): BacklogLag[] {
    return this.sources.backlogs();
  }

  /**
   * Enqueues the callbacks of an event, or the one a record of the once-callbacks topic hands on, in their lanes;
   * each promise is one callback's delivery (or handing on, once-callbacks.ts).
   */
  async admit(record: IncomingRecord, signal: AbortSignal, holdCommit: HoldCommit): Promise<Promise<unknown>[]> {
    const handed = record.topic === this.deps.topics.onceCallbacks;
    const e = handed ? parseOnceCallback(record) : parseEvent(record, this.deps.topics.taskEvents);
    if (!e) {
      const at = { topic: record.topic, partition: record.partition, offset: record.offset };
      this.logger.warn(
        at,
        `${handed ? 'a once callback' : 'an event'} that this service did not write matches nothing`,
      );
    }
    if (signal.aborted) return [];
    const offers = this.sources.offersOf(record, signal);
    if (!offers.restored) await this.sources.restore(offers);
    const offset = BigInt(record.offset);
    const deliveries: Promise<unknown>[] = [];
    if (e) {
      const receivedAt = record.receivedAt ?? Date.now();
      // Most records of a busy partition arrive after the view's last sync began: matched at once, without a promise.
      const view = this.deps.subscriptions.view;
      const synced = view.syncedAt > receivedAt || (await this.synced(receivedAt, signal));
      // Handed back while the view synced: the record is the next owner's.
      if (!synced || signal.aborted) return [];
      const subscriptions = 'webhookId' in e ? this.handedTo(e) : this.wanting(e);
      for (const sub of subscriptions) {
        const parts = () => ('webhookId' in e ? e : this.callbackParts(sub, e, record));
        const delivery = this.sources.offer(offers, sub, offset, holdCommit, parts);
        if (delivery) deliveries.push(delivery);
      }
    }
    this.sources.offered(offers, offset + 1n);
    return deliveries;
  }

  /** One shape for every callback (absent parts undefined, which JSON leaves out): optional spreads made many. */
  private callbackParts(sub: Subscription, e: BridgeEvent, record: IncomingRecord): CallbackParts {
    const parts: CallbackParts = {
      subscriptionId: sub.id,
      webhookId: webhookId(sub.id, e.id),
      event: e.kind,
      taskId: e.taskId || undefined,
      body: callbackBody(sub, e, this.deps.publicUrl?.() ?? ''),
      traceparent: record.headers.traceparent || undefined,
      handOn: undefined,
    };
    if (decidedByOneBridge(sub)) parts.handOn = handsOn(this.deps.topics.onceCallbacks, parts);
    return parts;
  }

  /** The subscription a handed-on once callback is for, while it is active: the callback goes to its lane here. */
  private handedTo(parts: CallbackParts): Subscription[] {
    const sub = this.deps.subscriptions.get(parts.subscriptionId);
    return sub?.status === 'active' && decidedByOneBridge(sub) ? [sub] : [];
  }

  private wanting(e: BridgeEvent): Subscription[] {
    const wanted: Subscription[] = [];
    for (const s of this.deps.subscriptions.view.values()) if (wants(s, e)) wanted.push(s);
    return wanted;
  }

  /**
   * Syncs the subscriptions view before a record is matched; retried in place so later records of the partition
   * wait. False when the record was handed back meanwhile.
   */
  async synced(receivedAt: number, signal: AbortSignal): Promise<boolean> {
    const view = this.deps.subscriptions.view;
    for (let failures = 1; !signal.aborted; failures += 1) {
      try {
        // Everything committed before the event is applied: a subscription made just before it (or with it, in the
        // same transaction as a task's first event) is matched.
        // +1: a sync begun in the same millisecond may have read the end offsets before the commit.
        await view.syncedSince(receivedAt + 1, this.deps.kafkaTimeoutMs);
        return true;
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 100, 5000);
        this.logger.warn({ err, retryInMs }, 'could not sync the subscriptions view; trying again');
        await pause(retryInMs, signal);
      }
    }
    return false;
  }

  /** One lane per subscription in this process: its callbacks go one at a time, in the order they were admitted. */
  private lane(subscriptionId: string): DeliveryLane {
    let lane = this.lanes.get(subscriptionId);
    if (!lane) {
      const created = new DeliveryLane(subscriptionId, this.laneDeps, {
        onIdle: () => {
          if (created.idle) this.lanes.delete(subscriptionId);
        },
        onRoom: () => this.sources.roomIn(subscriptionId),
        onEvicted: (jobs) => this.sources.evicted(subscriptionId, jobs),
        onStuck: (head) => this.sources.stuck(subscriptionId, head),
      });
      this.lanes.set(subscriptionId, (lane = created));
    }
    return lane;
  }
}

/**
 * On a graceful stop, callbacks under way (a request on the wire, an attempt's history being written) get this long
 * to finish before their events are handed back: handed back, they are delivered again by the next owner, repeats a
 * receiver already accepted. A lane waiting out a backoff is handed back after it.
 */
const STOP_GRACE_MS = 5000;

/**
 * The callback bridge: a consumer group on the event topics. An event's offset is committed only once each of its
 * callbacks is delivered, refused, gone or dead-lettered (see DeliveryLane); a failed Kafka step is retried in place,
 * never skipped.
 */
export async function startCallbackBridge(deps: CallbackBridgeDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'callback-bridge' });
  const agent = createCallbackAgent(deps.allowPrivate);
  // The group consumer keeps it; the lanes ask it before each callback (send-clearance.ts).
  const membership = new MembershipLease();
  const bridge = new CallbackBridge({ ...deps, membership }, agent, logger);
  const unwatch = deps.metrics?.watchCallbackBacklogs(() => bridge.backlogs());
  const events = await deps.runGroupConsumer({
    groupId: deps.groupId,
    topics: [deps.topics.taskEvents, deps.topics.domainEvents, deps.topics.onceCallbacks],
    maxInFlight: deps.concurrency,
    stopGraceMs: STOP_GRACE_MS,
    membership,
    handle: (record, signal, holdCommit) => bridge.onEvent(record, signal, holdCommit),
    onAssigned: (topic, partition, signal, resumeAt) => bridge.assigned(topic, partition, signal, resumeAt),
  });
  return {
    async stop() {
      unwatch?.();
      await events.stop();
      await agent.close().catch(() => undefined);
    },
  };
}
