import type { CommitHold, IncomingRecord, PartitionReader, Publisher, StateView } from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Logger } from '../../src/logger';
import type { BacklogLag } from '../../src/metrics/metrics';
import { wants, type Subscription, type TaskEventPosition } from '../../src/subscriptions/subscription';
import type { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import type { BacklogCursor } from '../../src/subscriptions/backlog-cursor';
import { CursorWriter, cursorsOf, type CursorDeps } from './backlog-cursors';
import { parseEvent, type BridgeEvent } from './bridge-event';
import type { DeliveryLane } from './delivery-lanes';
import { LaneStopped, type CallbackParts, type LaneJob } from './lane-job';
import type { DeliveredCallbacks } from './delivered-callbacks';
import { LaneBacklog, type BacklogDeps, type BacklogRange } from './lane-backlog';
import { ReadingSlots } from './reading-slots';
import { parseOnceCallback } from './once-callbacks';

export type HoldCommit = (offset: bigint) => CommitHold;

/**
 * Lane backlogs that read from Kafka at once (each reading a consumer of its own, ReadingSlots): enough for every
 * partition of a few slow subscriptions, few enough that hundreds of lanes filling together open no storm of them.
 */
const BACKLOG_READINGS = 32;

/** One partition as this member offers it to the lanes, for as long as it owns it (one hand-back signal). */
export interface PartitionOffers {
  topic: string;
  partition: number;
  signal: AbortSignal;
  /** when this member began offering it (Date.now()) */
  since: number;
  /** the next offset to offer: every record below it has been offered to its lanes, or passed to their backlogs */
  next: bigint;
  /** per subscription: its events of this partition that its lane had no room for */
  backlogs: Map<string, LaneBacklog>;
  /** the backlogs left by the partition's previous owner are taken over (their cursors read) */
  restored: boolean;
  /** the taking over, once begun: by the partition's assignment or its first record, whichever comes first */
  restoring?: Promise<void>;
  /** per subscription: the one writer of its backlogs' cursor on this partition */
  cursors: Map<string, CursorWriter>;
}

export interface LaneSourcesDeps {
  reader: PartitionReader;
  cursors: StateView<BacklogCursor>;
  subscriptions: SubscriptionStore;
  publisher: Publisher;
  topics: { taskEvents: string; callbackBacklogs: string; onceCallbacks: string };
  logger: Logger;
  kafkaTimeoutMs: number;
  /** the subscription's lane, made if there is none */
  lane(subscriptionId: string): DeliveryLane;
  /** the callback an event makes for a subscription */
  callbackParts(sub: Subscription, e: BridgeEvent, record: IncomingRecord): CallbackParts;
  /** the delivery history, read before a partition is taken over: what its last owner delivered is not sent again */
  delivered?: DeliveredCallbacks;
}

/**
 * Where each lane's callbacks come from: the group consumer's records, offered in offset order per partition, or the
 * lane's backlog on a partition, read again from Kafka (LaneBacklog). A lane with room takes what is offered; one
 * without room (a full buffer, a failing head) has its events of that partition read back later instead, so one
 * dead or slow endpoint holds a bounded part of the bridge, never all of it. Never both for one offset.
 */
export class LaneSources {
  private readonly partitions = new Map<string, PartitionOffers>();
  private readonly readingSlots = new ReadingSlots(BACKLOG_READINGS);
  private readonly cursorDeps: CursorDeps;

  constructor(private readonly deps: LaneSourcesDeps) {
    const { publisher, logger, kafkaTimeoutMs } = deps;
    this.cursorDeps = { publisher, topic: deps.topics.callbackBacklogs, logger, kafkaTimeoutMs };
  }

  /** The partition's offers under this hand-back signal: a partition owned again starts afresh. */
  offersOf(record: IncomingRecord, signal: AbortSignal): PartitionOffers {
    return this.offersAt(record.topic, record.partition, signal, BigInt(record.offset));
  }

  /**
   * The partition is this member's from `resumeAt` on, before any record of it came: its backlogs are taken over
   * now, and subscriptions owed its events are served, although the partition may bring no new record for a long
   * time (after a bridge's restart, a task that finished before it).
   */
  assigned(topic: string, partition: number, signal: AbortSignal, resumeAt: bigint): void {
    const offers = this.offersAt(topic, partition, signal, resumeAt);
    if (!offers.restored) void this.restore(offers);
  }

  /** `next`: where the group consumer's records resume, for offers made afresh */
  private offersAt(topic: string, partition: number, signal: AbortSignal, next: bigint): PartitionOffers {
    const key = `${topic}\u0000${partition}`;
    let offers = this.partitions.get(key);
    if (offers?.signal !== signal) {
      const fresh: PartitionOffers = {
        topic,
        partition,
        signal,
        since: Date.now(),
        next,
        backlogs: new Map(),
        restored: false,
        cursors: new Map(),
      };
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
   * Offers one subscription's callback of the record at `offset` to its lane: its delivery, or undefined when the
   * backlog has read it or will (the lane has no room: from here on the backlog reads the partition for it).
   */
  offer(
    offers: PartitionOffers,
    sub: Subscription,
    offset: bigint,
    holdCommit: HoldCommit,
    callback: () => CallbackParts,
  ): Promise<unknown> | undefined {
    const backlog = offers.backlogs.get(sub.id);
    if (backlog && !backlog.takes(offset)) return undefined;
    const lane = this.deps.lane(sub.id);
    if (!lane.hasRoom()) {
      if (backlog) backlog.detachFrom(offset, holdCommit);
      else offers.backlogs.set(sub.id, this.backlog(sub.id, offers, { from: offset }, holdCommit));
      lane.wantRoom();
      return undefined;
    }
    const origin = { partition: `${offers.topic}\u0000${offers.partition}`, offset, holdCommit };
    return lane.enqueue(callback(), offers.signal, origin);
  }

  /** When this member began offering the partition (`topic\u0000partition`), if it still does. */
  ownedSince(partition: string): number | undefined {
    const offers = this.partitions.get(partition);
    return offers && !offers.signal.aborted ? offers.since : undefined;
  }

  /** Everything below `upTo` is offered: backlogs whose reading has caught up give the partition back. */
  offered(offers: PartitionOffers, upTo: bigint): void {
    offers.next = upTo;
    for (const backlog of offers.backlogs.values()) backlog.offered(upTo);
  }

  /**
   * The backlogs the partition's previous owner left, from their cursors: read before the partition's first record
   * is offered, so none of their events is offered twice. Retried in place, like matching.
   */
  restore(offers: PartitionOffers): Promise<void> {
    offers.restoring ??= this.takeOver(offers);
    return offers.restoring;
  }

  private async takeOver(offers: PartitionOffers): Promise<void> {
    const { signal, topic, partition } = offers;
    const views = [this.deps.cursors, this.deps.subscriptions.view, this.deps.delivered?.view].filter((v) => !!v);
    for (let failures = 1; !signal.aborted; failures += 1) {
      try {
        const now = Date.now();
        await Promise.all(views.map((v) => v.syncedSince(now, this.deps.kafkaTimeoutMs)));
        break;
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 100, 5000);
        this.deps.logger.warn({ topic, partition, err, retryInMs }, 'could not read the backlog cursors; trying again');
        await pause(retryInMs, signal);
      }
    }
    if (signal.aborted) return;
    offers.restored = true;
    for (const c of cursorsOf(this.deps.cursors, topic, partition)) {
      if (offers.backlogs.has(c.subscriptionId)) continue;
      // Taken over as reading from `from` on, whatever `until` said: this member's group consumer may be anywhere
      // below or past it, and offering the events from `until` on before the backlog has read up to it would put
      // them in the lane ahead of the backlog's (an inversion the bridge-kill fault test caught). The backlog gives
      // the partition back once it has caught up, as a live one does.
      this.readBackFrom(offers, c.subscriptionId, BigInt(c.from));
    }
  }

  /**
   * A subscription owed its task's events from `at` (the api wrote a backlog cursor there with it) is in the view
   * now: where this member offers that partition, a backlog reads them for it, as one taken over from that cursor
   * would. Made as the view applies the subscription, before any event is matched against it, so none of its events
   * reaches the lane from the group consumer as well. Where this member does not offer the partition yet, restore()
   * finds the cursor.
   */
  owed(sub: Subscription, at: TaskEventPosition): void {
    const offers = this.partitions.get(`${at.topic}\u0000${at.partition}`);
    if (!offers || offers.signal.aborted || offers.backlogs.has(sub.id)) return;
    this.readBackFrom(offers, sub.id, BigInt(at.offset));
  }

  /**
   * A backlog from a position kept in Kafka (a cursor: the previous owner's, or the api's for an owed subscription).
   * Everything below `next` is the group's already: one from below it reads now, not at the partition's next record,
   * which a partition with nothing new may never bring.
   */
  private readBackFrom(offers: PartitionOffers, subscriptionId: string, from: bigint): void {
    const backlog = this.backlog(subscriptionId, offers, { from });
    offers.backlogs.set(subscriptionId, backlog);
    backlog.offered(offers.next);
  }

  /**
   * The lane's head began failing, or the lane fell behind: the callbacks it let go are read again later, each
   * partition's from the first of them.
   */
  evicted(subscriptionId: string, jobs: LaneJob[]): void {
    // Per partition, the first one let go: the backlog reads again from there (a lane keeps each partition's order).
    const first = new Map<string, LaneJob>();
    // The jobs of a partition handed back (and maybe taken again since) are the next owner's; they are not firsts.
    for (const job of jobs) {
      if (job.origin && !job.signal.aborted && !first.has(job.origin.partition)) first.set(job.origin.partition, job);
    }
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
    this.deps.lane(subscriptionId).wantRoom();
  }

  /** Per subscription and partition, what its backlog has still to read (hookstream_callback_backlog_offsets). */
  backlogs(): BacklogLag[] {
    const out: BacklogLag[] = [];
    for (const { topic, partition, backlogs } of this.partitions.values()) {
      for (const [subscription, backlog] of backlogs) out.push({ subscription, topic, partition, lag: backlog.unread });
    }
    return out;
  }

  /** The subscription is no longer active: its backlogs on every partition end. */
  subscriptionEnded(subscriptionId: string): void {
    for (const offers of this.partitions.values()) offers.backlogs.get(subscriptionId)?.subscriptionEnded();
  }

  /** The subscription's lane has room again: its backlogs read on. */
  roomIn(subscriptionId: string): void {
    for (const offers of this.partitions.values()) offers.backlogs.get(subscriptionId)?.resume();
  }

  /**
   * The lane's head is stuck (lane HEAD_STUCK_AFTER). One the group consumer offered is taken over by its partition's
   * backlog: its record finishes, and the partition's commit is held by the backlog's cursor, not by a dead endpoint.
   */
  stuck(subscriptionId: string, head: LaneJob): void {
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
    // From here on the group consumer passes this subscription's events of the partition by: the backlog reads them,
    // once the lane has room (after the head). Nothing else would start that reading when no event had been queued
    // behind the head, and the events after it were never delivered.
    backlog.resume();
  }

  private cursorOf(subscriptionId: string, offers: PartitionOffers): CursorWriter {
    let writer = offers.cursors.get(subscriptionId);
    if (!writer) {
      const { topic, partition, signal } = offers;
      writer = new CursorWriter({ subscriptionId, topic, partition }, signal, this.cursorDeps);
      offers.cursors.set(subscriptionId, writer);
    }
    return writer;
  }

  private backlog(
    subscriptionId: string,
    offers: PartitionOffers,
    range: BacklogRange,
    holdCommit?: HoldCommit,
  ): LaneBacklog {
    const { deps } = this;
    const backlogDeps: BacklogDeps = {
      reader: deps.reader,
      logger: deps.logger,
      kafkaTimeoutMs: deps.kafkaTimeoutMs,
      lane: () => deps.lane(subscriptionId),
      callbackFor: (r) => {
        const sub = deps.subscriptions.get(subscriptionId);
        if (!sub || sub.status !== 'active') return 'ended';
        if (r.topic === deps.topics.onceCallbacks) {
          const handed = parseOnceCallback(r);
          return handed?.subscriptionId === subscriptionId ? handed : undefined;
        }
        const e = parseEvent(r, deps.topics.taskEvents);
        return e && wants(sub, e) ? deps.callbackParts(sub, e, r) : undefined;
      },
      offeredUpTo: () => offers.next,
      slots: this.readingSlots,
      cursor: this.cursorOf(subscriptionId, offers),
      forget: (b) => {
        if (offers.backlogs.get(subscriptionId) === b) offers.backlogs.delete(subscriptionId);
      },
    };
    const { topic, partition, signal } = offers;
    return new LaneBacklog(topic, partition, subscriptionId, signal, backlogDeps, range, holdCommit);
  }
}
