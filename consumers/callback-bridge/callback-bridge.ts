import type {
  CommitHold,
  ConsumerHandle,
  GroupConsumerOptions,
  IncomingRecord,
  PartitionReader,
  Publisher,
  StateView,
} from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import { KeyedSerial } from '../../src/lib/keyed-serial';
import type { Logger } from '../../src/logger';
import { wants, type Subscription } from '../../src/subscriptions/subscription';
import { callbackBody, parseEvent, webhookId, type BridgeEvent } from './bridge-event';
import { DeliveryLane, LaneStopped, type CallbackParts, type LaneDeps, type LaneJob } from './delivery-lanes';
import { LaneBacklog, type BacklogDeps, type BacklogRange } from './lane-backlog';
import { cursorsOf, type BacklogCursor } from './backlog-cursors';
import { ReadingSlots } from './reading-slots';
import { AttemptRecorder } from './attempt-recorder';
import { createCallbackAgent } from './send-callback';

/**
 * How often, at most, the attempt records of all lanes are written (AttemptRecorder): what it adds is only to when an
 * event is committed, never to when its callback is sent.
 */
const HISTORY_LINGER_MS = 50;

type HoldCommit = (offset: bigint) => CommitHold;

/**
 * Lane backlogs that read from Kafka at once (each reading a consumer of its own, ReadingSlots): enough for every
 * partition of a few slow subscriptions, few enough that hundreds of lanes filling together open no storm of them.
 */
const BACKLOG_READINGS = 32;

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
}

/** One partition as this member offers it to the lanes, for as long as it owns it (one hand-back signal). */
interface PartitionOffers {
  topic: string;
  partition: number;
  signal: AbortSignal;
  /** the next offset to offer: every record below it has been offered to its lanes, or passed to their backlogs */
  next: bigint;
  /** per subscription: its events of this partition that its lane had no room for */
  backlogs: Map<string, LaneBacklog>;
  /** the backlogs left by the partition's previous owner are taken over (their cursors read) */
  restored: boolean;
}

/**
 * Turns each event into callbacks for the subscriptions that want it. Events of one partition enter their lanes in
 * offset order (admitted one after another per partition), which is what keeps one subscription's callbacks in
 * order; only the deliveries of different lanes run side by side. A lane holds a bounded number of callbacks in
 * memory; what it has no room for is read again from Kafka later (LaneBacklog), so one dead or slow endpoint never
 * holds the events of the others.
 */
export class CallbackBridge {
  private readonly lanes = new Map<string, DeliveryLane>();
  /** per topic-partition: admission in offset order */
  private readonly admission = new KeyedSerial();
  private readonly partitions = new Map<string, PartitionOffers>();
  private readonly readingSlots = new ReadingSlots(BACKLOG_READINGS);
  private readonly laneDeps: LaneDeps;

  constructor(
    private readonly deps: CallbackBridgeDeps,
    agent: LaneDeps['agent'],
    private readonly logger: Logger,
  ) {
    this.laneDeps = { ...deps, agent, logger, history: new AttemptRecorder(deps.publisher, HISTORY_LINGER_MS) };
  }

  /**
   * Resolves once every callback of the event is done (delivered, refused, gone or dead-lettered), or passed to a
   * backlog that holds the partition's commit until it is.
   */
  async onEvent(record: IncomingRecord, signal: AbortSignal, holdCommit: HoldCommit): Promise<void> {
    const partition = `${record.topic}\u0000${record.partition}`;
    const deliveries = await this.admission.run(partition, () => this.admit(record, signal, holdCommit));
    await Promise.all(deliveries);
  }

  /** Enqueues the event's callbacks in their lanes; each promise is one callback's delivery. */
  async admit(record: IncomingRecord, signal: AbortSignal, holdCommit: HoldCommit): Promise<Promise<unknown>[]> {
    const e = parseEvent(record, this.deps.topics.taskEvents);
    if (!e) {
      const at = { topic: record.topic, partition: record.partition, offset: record.offset };
      this.logger.warn(at, 'an event that is not JSON with a type matches nothing');
    }
    if (signal.aborted) return [];
    const offers = this.offersOf(record, signal);
    if (!offers.restored) await this.restore(offers);
    if (!e) {
      this.offered(record, signal, []);
      return [];
    }
    const receivedAt = record.receivedAt ?? Date.now();
    // Most events of a busy partition arrive after the view's last sync began: matched at once, without a promise.
    const view = this.deps.subscriptions.view;
    const subscriptions =
      (view.syncedAt > receivedAt ? this.wanting(e) : await this.matching(e, receivedAt, signal)) ?? [];
    const offset = BigInt(record.offset);
    const deliveries = this.offered(record, signal, subscriptions, (sub, offers) => {
      const backlog = offers.backlogs.get(sub.id);
      if (backlog && !backlog.takes(offset)) return undefined; // the backlog has read it, or will
      const lane = this.lane(sub.id);
      if (!lane.hasRoom()) {
        if (backlog) backlog.detachFrom(offset, holdCommit);
        else offers.backlogs.set(sub.id, this.backlog(sub.id, offers, { from: offset }, holdCommit));
        lane.wantRoom();
        return undefined;
      }
      const origin = { partition: `${record.topic}\u0000${record.partition}`, offset, holdCommit };
      return lane.enqueue(this.callbackParts(sub, e, record), signal, origin);
    });
    return deliveries;
  }

  /**
   * Offers the record to each subscription's lane (or its backlog), then marks it offered: backlogs whose reading
   * has caught up give the partition back.
   */
  private offered(
    record: IncomingRecord,
    signal: AbortSignal,
    subscriptions: Subscription[],
    offer?: (sub: Subscription, offers: PartitionOffers) => Promise<unknown> | undefined,
  ): Promise<unknown>[] {
    const offers = this.offersOf(record, signal);
    const deliveries: Promise<unknown>[] = [];
    for (const sub of subscriptions) {
      const delivery = offer?.(sub, offers);
      if (delivery) deliveries.push(delivery);
    }
    offers.next = BigInt(record.offset) + 1n;
    for (const backlog of offers.backlogs.values()) backlog.offered(offers.next);
    return deliveries;
  }

  /** One shape for every callback (absent parts undefined, which JSON leaves out): optional spreads made many. */
  private callbackParts(sub: Subscription, e: BridgeEvent, record: IncomingRecord): CallbackParts {
    return {
      subscriptionId: sub.id,
      webhookId: webhookId(sub.id, e.id),
      event: e.kind,
      taskId: e.taskId || undefined,
      body: callbackBody(sub, e, this.deps.publicUrl?.() ?? ''),
      traceparent: record.headers.traceparent || undefined,
    };
  }

  /** The partition's offers under this hand-back signal: a partition owned again starts afresh. */
  private offersOf(record: IncomingRecord, signal: AbortSignal): PartitionOffers {
    const key = `${record.topic}\u0000${record.partition}`;
    let offers = this.partitions.get(key);
    if (offers?.signal !== signal) {
      const { topic, partition } = record;
      const next = BigInt(record.offset);
      const fresh: PartitionOffers = { topic, partition, signal, next, backlogs: new Map(), restored: false };
      this.partitions.set(key, (offers = fresh));
      signal.addEventListener(
        'abort',
        () => {
          if (this.partitions.get(key) === fresh) this.partitions.delete(key);
        },
        { once: true },
      );
    }
    return offers;
  }

  /**
   * The backlogs the partition's previous owner left, from their cursors: read before the partition's first record
   * is offered, so none of their events is offered twice. Retried in place, like matching.
   */
  private async restore(offers: PartitionOffers): Promise<void> {
    const { signal, topic, partition } = offers;
    const views = [this.deps.cursors, this.deps.subscriptions.view];
    for (let failures = 1; !signal.aborted; failures += 1) {
      try {
        const now = Date.now();
        await Promise.all(views.map((v) => v.syncedSince(now, this.deps.kafkaTimeoutMs)));
        break;
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 100, 5000);
        this.logger.warn({ topic, partition, err, retryInMs }, 'could not read the lane backlog cursors; trying again');
        await pause(retryInMs, signal);
      }
    }
    if (signal.aborted) return;
    offers.restored = true;
    for (const c of cursorsOf(this.deps.cursors, topic, partition)) {
      if (offers.backlogs.has(c.subscriptionId)) continue;
      const range = { from: BigInt(c.from), until: c.until === undefined ? undefined : BigInt(c.until) };
      offers.backlogs.set(c.subscriptionId, this.backlog(c.subscriptionId, offers, range));
    }
  }

  private backlog(
    subscriptionId: string,
    offers: PartitionOffers,
    range: BacklogRange,
    holdCommit?: HoldCommit,
  ): LaneBacklog {
    const deps: BacklogDeps = {
      reader: this.deps.reader,
      logger: this.logger,
      kafkaTimeoutMs: this.deps.kafkaTimeoutMs,
      lane: () => this.lane(subscriptionId),
      callbackFor: (r) => {
        const sub = this.deps.subscriptions.get(subscriptionId);
        if (!sub || sub.status !== 'active') return 'ended';
        const e = parseEvent(r, this.deps.topics.taskEvents);
        return e && wants(sub, e) ? this.callbackParts(sub, e, r) : undefined;
      },
      offeredUpTo: () => offers.next,
      slots: this.readingSlots,
      cursors: {
        publisher: this.deps.publisher,
        topic: this.deps.topics.callbackBacklogs,
        logger: this.logger,
        kafkaTimeoutMs: this.deps.kafkaTimeoutMs,
      },
      forget: (b) => {
        if (offers.backlogs.get(subscriptionId) === b) offers.backlogs.delete(subscriptionId);
      },
    };
    const { topic, partition, signal } = offers;
    return new LaneBacklog(topic, partition, subscriptionId, signal, deps, range, holdCommit);
  }

  /**
   * The lane's head is failing. A head the group consumer offered is taken over by its partition's backlog, so its
   * record finishes and the partition's commit is held by the backlog's cursor, not by a dead endpoint. The callbacks
   * queued behind it are let go: each partition's are read again from the first.
   */
  private evicted(subscriptionId: string, jobs: LaneJob[], head: LaneJob): void {
    this.adopt(subscriptionId, head);
    // Per partition, the first one let go: the backlog reads again from there (a lane keeps each partition's order).
    const first = new Map<string, LaneJob>();
    for (const job of jobs) if (job.origin && !first.has(job.origin.partition)) first.set(job.origin.partition, job);
    for (const { origin, signal } of first.values()) {
      const offers = origin && this.partitions.get(origin.partition);
      // A handed-back partition's callbacks are the next owner's: nothing to read again here.
      if (!origin || !offers || offers.signal !== signal || signal.aborted) continue;
      const backlog = offers.backlogs.get(subscriptionId);
      if ('backlog' in origin) origin.backlog.rewind(origin.offset);
      else if (backlog) backlog.detachFrom(origin.offset, origin.holdCommit);
      else {
        const backlog = this.backlog(subscriptionId, offers, { from: origin.offset }, origin.holdCommit);
        offers.backlogs.set(subscriptionId, backlog);
      }
    }
    for (const job of jobs) {
      if (job.signal.aborted) job.reject(new LaneStopped());
      else job.resolve('evicted');
    }
    this.lane(subscriptionId).wantRoom();
  }

  private adopt(subscriptionId: string, head: LaneJob): void {
    const { origin, signal } = head;
    if (!origin || 'backlog' in origin || signal.aborted) return;
    const offers = this.partitions.get(origin.partition);
    if (!offers || offers.signal !== signal) return;
    let backlog = offers.backlogs.get(subscriptionId);
    if (!backlog) {
      backlog = this.backlog(subscriptionId, offers, { from: origin.offset }, origin.holdCommit);
      offers.backlogs.set(subscriptionId, backlog);
    }
    head.adopted = backlog.adoptHead(origin.offset, origin.holdCommit);
    head.resolve('evicted');
  }

  /** The subscription's lane has room again: its backlogs read on. */
  private roomIn(subscriptionId: string): void {
    for (const offers of this.partitions.values()) offers.backlogs.get(subscriptionId)?.resume();
  }

  private wanting(e: BridgeEvent): Subscription[] {
    const wanted: Subscription[] = [];
    for (const s of this.deps.subscriptions.view.values()) if (wants(s, e)) wanted.push(s);
    return wanted;
  }

  /** Matches an event, syncing the subscriptions view first; retried in place so later events of the partition wait. */
  async matching(e: BridgeEvent, receivedAt: number, signal: AbortSignal): Promise<Subscription[] | undefined> {
    const view = this.deps.subscriptions.view;
    for (let failures = 1; !signal.aborted; failures += 1) {
      try {
        // Everything committed before the event is applied: a subscription made just before it (or with it, in the
        // same transaction as a task's first event) is matched.
        // +1: a sync begun in the same millisecond may have read the end offsets before the commit.
        await view.syncedSince(receivedAt + 1, this.deps.kafkaTimeoutMs);
        return this.wanting(e);
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 100, 5000);
        this.logger.warn({ err, retryInMs }, 'could not sync the subscriptions view; trying again');
        await pause(retryInMs, signal);
      }
    }
    return undefined;
  }

  /** One lane per subscription in this process: its callbacks go one at a time, in the order they were admitted. */
  private lane(subscriptionId: string): DeliveryLane {
    let lane = this.lanes.get(subscriptionId);
    if (!lane) {
      const created = new DeliveryLane(subscriptionId, this.laneDeps, {
        onIdle: () => {
          if (created.idle) this.lanes.delete(subscriptionId);
        },
        onRoom: () => this.roomIn(subscriptionId),
        onEvicted: (jobs, head) => this.evicted(subscriptionId, jobs, head),
      });
      this.lanes.set(subscriptionId, (lane = created));
    }
    return lane;
  }
}

/**
 * The callback bridge: a consumer group on the event topics. An event's offset is committed only once each of its
 * callbacks is delivered, refused, gone or dead-lettered (see DeliveryLane); a failed Kafka step is retried in place,
 * never skipped.
 */
export async function startCallbackBridge(deps: CallbackBridgeDeps): Promise<ConsumerHandle> {
  const logger = deps.logger.child({ component: 'callback-bridge' });
  const agent = createCallbackAgent(deps.allowPrivate);
  const bridge = new CallbackBridge(deps, agent, logger);
  const events = await deps.runGroupConsumer({
    groupId: deps.groupId,
    topics: [deps.topics.taskEvents, deps.topics.domainEvents],
    maxInFlight: deps.concurrency,
    handle: (record, signal, holdCommit) => bridge.onEvent(record, signal, holdCommit),
  });
  return {
    async stop() {
      await events.stop();
      await agent.close().catch(() => undefined);
    },
  };
}
