import type { Agent } from 'undici';
import type { Publisher } from '../../src/kafka/types';
import type { Logger } from '../../src/logger';
import { CallbackFailureLog } from './callback-failure-log';
import type { ServiceMetrics } from '../../src/metrics/metrics';
import type { Tracer } from '../../src/tracing/tracer';
import type { SubscriptionStore } from '../../src/subscriptions/subscription-store';
import type { AttemptRecorder } from './attempt-recorder';
import type { DeliveredCallbacks } from './delivered-callbacks';
import type { CallbackParts, JobOrigin, LaneExit, LaneJob } from './lane-job';
import { CallbackDelivery } from './callback-delivery';
import type { ClearanceDeps } from './send-clearance';

export interface LaneDeps extends ClearanceDeps {
  publisher: Publisher;
  /** the delivery history's writer, shared by every lane */
  history: AttemptRecorder;
  /** the api's store: the bridge reads subscriptions from it and ends them through it, one writer of the format */
  subscriptions: SubscriptionStore;
  agent: Agent;
  logger: Logger;
  topics: { deliveries: string; callbackDeadLetters: string; onceCallbacks: string };
  callbacks: {
    timeoutMs: number;
    maxAttempts: number;
    backoffBaseMs: number;
    backoffMaxMs: number;
    /** callbacks one lane holds in memory while its head is not failing (CALLBACK_LANE_BUFFER) */
    laneBuffer: number;
    /** LANE_BEHIND_MS unless a test gives less */
    laneBehindMs?: number;
  };
  kafkaTimeoutMs: number;
  metrics?: Pick<ServiceMetrics, 'callbackAttempt'>;
  tracer?: Tracer;
  /** callbacks waiting in every lane of the bridge, against what they may take before lanes keep to their buffer */
  waiting?: BridgeWaiting;
  /** the bridge's, shared by every lane: failures told without a line each (one of the lane's own without it) */
  failureLog?: CallbackFailureLog;
  /** callbacks the delivery history shows done (by an earlier owner of their events): not sent again */
  delivered?: DeliveredCallbacks;
  /** when this bridge began offering a partition (as JobOrigin keys it), if it still does (earlier-owner.ts) */
  ownedSince?(partition: string): number | undefined;
}

/**
 * The callbacks waiting in all of a bridge's lanes. While they are below `spare`, a healthy lane queues past its
 * buffer (in memory is the fast path); above it, each keeps to CALLBACK_LANE_BUFFER, so a slow endpoint's backlog
 * never takes the last of the bridge's budget from the others.
 */
export interface BridgeWaiting {
  count: number;
  readonly spare: number;
}

/** What a lane tells the bridge about itself. */
export interface LaneEvents {
  /** nothing queued, nothing being delivered: the lane may be dropped */
  onIdle(): void;
  /** it has room again after somebody was told it had none (wantRoom) */
  onRoom(): void;
  /**
   * Its head began failing, or it fell behind (LANE_BEHIND_MS): the callbacks queued behind its head (when behind,
   * those from the first the group consumer offered on) were let go, their events to be read again.
   */
  onEvicted(jobs: LaneJob[]): void;
  /**
   * Its head has failed HEAD_STUCK_AFTER times in a row: it may be taken over by a backlog (still retried here), so
   * that its event no longer holds its partition's commit.
   */
  onStuck(head: LaneJob): void;
}

/**
 * Failed attempts in a row after which a head counts as stuck (LaneEvents.onStuck). Fewer would take a backlog (and a
 * reading of the partition later) for every passing failure; a dead endpoint gets there within seconds.
 */
export const HEAD_STUCK_AFTER = 3;

/**
 * How long the oldest callback waiting in a lane may have waited: past it, the lane takes no more than its buffer
 * (CALLBACK_LANE_BUFFER, not the bridge's spare budget), and lets the callbacks the group consumer offered it go back
 * to Kafka, read again by a backlog (shedIfBehind). A burst to a healthy endpoint is delivered from memory long
 * before; an endpoint slower than its events come (one answer a second, four events a second) would otherwise hold
 * minutes of events in memory, and with them its partitions' commit: every other subscription then got those minutes
 * again from a bridge's successor, past what the delivery history remembers.
 */
export const LANE_BEHIND_MS = 10000;

/**
 * One subscription's callbacks, delivered one at a time and in the order
 * they were enqueued. A failing head is retried in place, with backoff and
 * Retry-After, until it is delivered, refused, gone or dead-lettered; only then
 * does the next one go. So a failure blocks its own lane and nothing else, and
 * order holds across retries. The lane's events stay uncommitted meanwhile,
 * so after a crash they come back in order (at least once, same webhook-id).
 */
export class DeliveryLane {
  private readonly queue: LaneJob[] = [];
  private working = false;
  /** the callback being delivered */
  private head: LaneJob | undefined;
  /** the head's last attempt failed and it waits to try again: the lane holds nothing but its head */
  private failing = false;
  /** somebody was told the lane had no room, and waits to hear of it */
  private roomWanted = false;
  /** queued callbacks the group consumer offered: each holds its partition's commit until it is done */
  private holdingCommit = 0;
  private readonly delivery: CallbackDelivery;

  constructor(
    subscriptionId: string,
    private readonly deps: LaneDeps,
    private readonly events: Pick<LaneEvents, 'onIdle'> & Partial<LaneEvents>,
  ) {
    const failureLog = deps.failureLog ?? new CallbackFailureLog(deps.logger);
    this.delivery = new CallbackDelivery(subscriptionId, deps, failureLog, (attempt) => this.headFailed(attempt));
  }

  /**
   * Resolves once the callback is delivered, refused, gone, dead-lettered, or its subscription has ended ('done'),
   * or once the lane let it go because its head began failing ('evicted', see onEvicted).
   */
  enqueue(message: CallbackParts, signal: AbortSignal, origin?: JobOrigin): Promise<LaneExit> {
    return new Promise((resolve, reject) => {
      const job = { message, signal, origin, queuedAt: performance.now(), resolve, reject };
      this.queue.push(job);
      if (holdsCommit(job)) this.holdingCommit += 1;
      if (this.deps.waiting) this.deps.waiting.count += 1;
      if (!this.working) void this.work();
    });
  }

  /**
   * Whether one more callback may wait in memory: the lane's buffer is not full and its head is not failing. What
   * finds no room is read again from Kafka later (lane-backlog.ts): a dead or slow endpoint holds a bounded part of
   * the bridge, never all of it.
   */
  hasRoom(): boolean {
    if (this.failing) return false;
    if (this.queue.length < this.deps.callbacks.laneBuffer) return true;
    const { waiting } = this.deps;
    return waiting !== undefined && waiting.count < waiting.spare && !this.behind();
  }

  /** Its oldest waiting callback has waited longer than LANE_BEHIND_MS. */
  private behind(): boolean {
    const oldest = this.queue[0];
    const limit = this.deps.callbacks.laneBehindMs ?? LANE_BEHIND_MS;
    return oldest !== undefined && performance.now() - oldest.queuedAt > limit;
  }

  /**
   * A lane that has fallen behind (LANE_BEHIND_MS) lets go of what holds its partitions' commit: the callbacks from
   * the first one the group consumer offered on (a failing head lets go of all). Their events are read again from
   * Kafka, in order, by backlogs whose cursors hold the commit instead; what a backlog feeds the lane holds none. So
   * a slow endpoint holds the commit for about LANE_BEHIND_MS and its head, not for its buffer times its answer time.
   */
  private shedIfBehind(): void {
    if (!this.events.onEvicted || this.holdingCommit === 0 || !this.behind()) return;
    const first = this.queue.findIndex(holdsCommit);
    const shed = this.queue.splice(first);
    if (this.deps.waiting) this.deps.waiting.count -= shed.length;
    this.holdingCommit = 0;
    this.events.onEvicted(shed);
  }

  /** onRoom is called once the lane has room again */
  wantRoom(): void {
    this.roomWanted = true;
  }

  private roomMayHaveOpened(): void {
    if (!this.roomWanted || !this.hasRoom()) return;
    this.roomWanted = false;
    this.events.onRoom?.();
  }

  private taken(): LaneJob | undefined {
    const job = this.queue.shift();
    if (job && this.deps.waiting) this.deps.waiting.count -= 1;
    if (job && holdsCommit(job)) this.holdingCommit -= 1;
    return job;
  }

  private async work(): Promise<void> {
    this.working = true;
    for (let job = this.taken(); job; job = this.taken()) {
      this.shedIfBehind();
      this.roomMayHaveOpened();
      // The attempt history is written behind the lane: the next callback need not wait for it, its event does.
      const writes: Promise<void>[] = [];
      this.head = job;
      try {
        await this.delivery.deliver(job.message, job.signal, writes, job.origin?.partition);
        const { reject } = job;
        const done = () => (job.adopted ? job.adopted() : job.resolve('done'));
        // Mostly one write (a first attempt that worked): then no Promise.all.
        if (writes.length === 1) writes[0].then(done, reject);
        else Promise.all(writes).then(done, reject);
      } catch (err) {
        job.reject(err as Error);
      } finally {
        this.failing = false;
        this.head = undefined;
      }
      this.roomMayHaveOpened();
    }
    this.working = false;
    this.events.onIdle();
  }

  /**
   * The head failed and waits for its next attempt: the callbacks queued behind it leave memory (their events are
   * read again from Kafka once the head is done), so a dead endpoint holds one event of the bridge's, not a queue.
   * Only a lane the bridge reads back for (onEvicted) lets go; the order is kept, as the backlog starts at the first.
   */
  private headFailed(attempt: number): void {
    if (attempt === HEAD_STUCK_AFTER && this.head) this.events.onStuck?.(this.head);
    if (this.failing) return;
    this.failing = true;
    if (!this.events.onEvicted) return;
    const evicted = this.queue.splice(0);
    if (this.deps.waiting) this.deps.waiting.count -= evicted.length;
    this.holdingCommit = 0;
    if (evicted.length > 0) this.events.onEvicted(evicted);
  }

  get idle(): boolean {
    return !this.working && this.queue.length === 0;
  }
}

/** A callback the group consumer offered (not a backlog): its record holds the partition's commit. */
function holdsCommit(job: LaneJob): boolean {
  return job.origin !== undefined && !('backlog' in job.origin);
}
