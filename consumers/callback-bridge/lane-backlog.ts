import type { CommitHold, IncomingRecord } from '../../src/kafka/types';
import type { DeliveryLane } from './delivery-lanes';
import type { CallbackParts, LaneExit } from './lane-job';
import type { CursorWriter } from './backlog-cursors';
import { BacklogCommitGuard } from './backlog-commit-guard';
import { BacklogReading, type BacklogReadingDeps, type ReadingTurn } from './backlog-reading';

type HoldCommit = (offset: bigint) => CommitHold;

export interface BacklogDeps extends BacklogReadingDeps {
  /** the subscription's lane now (a lane is dropped while idle and made again) */
  lane(): DeliveryLane;
  /** the callback the record makes for the subscription; undefined if it wants none, 'ended' once it has ended */
  callbackFor(record: IncomingRecord): CallbackParts | undefined | 'ended';
  /** the next offset the group consumer offers to the lanes: every record below it has been offered */
  offeredUpTo(): bigint;
  /** where the backlog's cursor is kept (backlog-cursors.ts): one writer per subscription and partition */
  cursor: CursorWriter;
  /** nothing is held, nothing is left to read: the bridge drops the backlog */
  forget(backlog: LaneBacklog): void;
}

/** A backlog's range: its events from `from` on, up to `until` when it is known where the group consumer resumes. */
export interface BacklogRange {
  from: bigint;
  until?: bigint;
}

/**
 * One subscription's events of one partition that its lane had no room for: instead of waiting in memory (where a
 * dead endpoint's backlog would fill the bridge and stall every subscription), they are read again from Kafka, from
 * the first one, once the lane has room. The group consumer passes them by meanwhile. Its cursor (backlog-cursors.ts)
 * keeps its position in Kafka, so the group consumer commits past it; until the cursor is written, a commit hold keeps
 * the partition's committed offset at the oldest of them. Either way a crash hands them to the next bridge (at least
 * once), and only them.
 *
 * Two sources feed the lane in turn, and never the same offset: the group consumer below `start`, this backlog from
 * there. The backlog gives the partition back (`attachedAt`) once its reading has caught up with the group
 * consumer's offers; the group consumer then offers the offsets from `attachedAt` on again, and passes by the ones
 * below it that it had not offered yet (the reading did). A backlog a new owner takes over from its cursor starts
 * reading once the group consumer has offered everything below `start`: the lane gets the partition's events in
 * order.
 */
export class LaneBacklog {
  /** the partition as the bridge keys it */
  readonly key: string;
  /** the next offset to read; the subscription's events below it are in its lane, delivered, or not wanted */
  private next: bigint;
  /** offsets read back and queued in the lane, not yet done */
  private readonly inLane = new Set<bigint>();
  /** the first offset of the backlog: the group consumer offers what is below it */
  private start: bigint;
  /** taken over from a cursor, it reads only once the group consumer has offered everything below `start` */
  private gated: boolean;
  /** the commit kept at its point: a hold, then its cursor */
  private readonly guard: BacklogCommitGuard;
  /** the group consumer offers this subscription's events again from here; undefined while the backlog reads */
  private attachedAt: bigint | undefined;
  /** its turns at reading; a record from any but the current one is stale and passed over */
  private readonly reading: BacklogReading;
  private ended = false;
  /** removed when it ends: the signal lives as long as the partition is this process's, backlogs come and go */
  private readonly onHandBack = () => this.end();

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly subscriptionId: string,
    /** the hand-back signal of the partition's records: the backlog is the partition owner's, and ends with it */
    private readonly signal: AbortSignal,
    private readonly deps: BacklogDeps,
    range: BacklogRange,
    /** the record at `range.from`, unfinished; none for a backlog taken over from its cursor (it is in Kafka) */
    holdCommit?: HoldCommit,
  ) {
    this.key = `${topic}\u0000${partition}`;
    this.start = range.from;
    this.next = range.from;
    this.attachedAt = range.until;
    this.gated = !holdCommit;
    this.reading = new BacklogReading(this, deps, (turn, record) => this.onRecord(turn, record));
    this.guard = new BacklogCommitGuard(
      deps.cursor,
      subscriptionId,
      () => this.point(),
      holdCommit ? undefined : range.from,
    );
    this.updatePoint(holdCommit);
    signal.addEventListener('abort', this.onHandBack, { once: true });
  }

  /**
   * Offsets of the partition it has still to read for its subscription: from where it reads to where the group
   * consumer offers again (or has offered up to). Once its cursor is written they count in no consumer group's lag.
   */
  get unread(): number {
    const end = this.attachedAt ?? this.deps.offeredUpTo();
    return this.ended || end <= this.next ? 0 : Number(end - this.next);
  }

  /** whether the group consumer offers this offset to the lane; if not, the backlog has read it, or will */
  takes(offset: bigint): boolean {
    return offset < this.start || (this.attachedAt !== undefined && offset >= this.attachedAt);
  }

  /** it has read everything it owns: the group consumer offers from `attachedAt` on */
  private get readAll(): boolean {
    return this.attachedAt !== undefined && this.next >= this.attachedAt;
  }

  /**
   * The lane had no room for `offset`, or let its callback go: the subscription's events from there on are read
   * again from Kafka. `holdCommit` is the one of the record at `offset`, still unfinished: it can hold lower than
   * this backlog holds now.
   */
  detachFrom(offset: bigint, holdCommit: HoldCommit): void {
    this.readAgainFrom(offset, holdCommit);
  }

  /**
   * The lane's failing head, offered by the group consumer at `offset`, is now this backlog's: it stays in the lane,
   * and its record (whose `holdCommit` this is) need not wait for it. `done` is to be called when it is done.
   */
  adoptHead(offset: bigint, holdCommit: HoldCommit): () => void {
    this.inLane.add(offset);
    // Offered after the backlog gave the partition back: the backlog answers for it again, and only for it.
    if (this.attachedAt !== undefined && offset >= this.attachedAt) this.attachedAt = offset + 1n;
    if (this.next <= offset) this.next = offset + 1n;
    this.updatePoint(holdCommit);
    return () => this.done(offset);
  }

  /** The lane let go of the callbacks read back from `offset` on (its head began failing): read them again. */
  rewind(offset: bigint): void {
    this.readAgainFrom(offset);
  }

  private readAgainFrom(offset: bigint, holdCommit?: HoldCommit): void {
    // Ended with its partition or its subscription: nothing of it is read again here.
    if (this.ended) return;
    for (const o of this.inLane) if (o >= offset) this.inLane.delete(o);
    // Below its start only for one taken over from a cursor, offered again by the group consumer: from here on the
    // backlog reads, so the group consumer must not offer the rest below the old start as well.
    if (offset < this.start) this.start = offset;
    this.next = offset;
    this.attachedAt = undefined;
    this.stopReading();
    this.updatePoint(holdCommit);
  }

  /** The group consumer has offered everything below `upTo`: a reading that got there gives the partition back. */
  offered(upTo: bigint): void {
    if (this.gated && upTo >= this.start) {
      this.gated = false;
      this.resume();
    }
    if (this.attachedAt === undefined) {
      if (this.reading.active && this.next >= upTo) this.attach();
    } else if (this.readAll && this.inLane.size === 0 && upTo >= this.attachedAt) {
      this.finish();
    }
  }

  /** The lane may have room: a waiting record goes in, or a reading starts. */
  resume(): void {
    if (this.reading.resumeWaiting()) return;
    if (this.ended || this.gated || this.readAll || this.reading.busy) return;
    const lane = this.deps.lane();
    if (!lane.hasRoom()) {
      lane.wantRoom();
      return;
    }
    this.reading.start(this.next);
  }

  private async onRecord(turn: ReadingTurn, record: IncomingRecord): Promise<void> {
    if (!this.reading.isCurrent(turn)) return;
    const offset = BigInt(record.offset);
    if (offset < this.next || this.ended) return;
    if (this.attachedAt !== undefined && offset >= this.attachedAt) {
      this.readTo(this.attachedAt);
      return;
    }
    const callback = this.deps.callbackFor(record);
    if (callback === 'ended') {
      this.finish();
      return;
    }
    if (callback) {
      while (!this.deps.lane().hasRoom()) {
        if (await this.reading.waitForRoom(this.deps.lane())) return;
        this.deps.slots.busy(this);
        if (!this.reading.isCurrent(turn)) return;
      }
      this.inLane.add(offset);
      const exit = this.deps.lane().enqueue(callback, this.signal, { partition: this.key, offset, backlog: this });
      exit
        .then(
          (how: LaneExit) => how === 'done' && this.done(offset),
          () => undefined, // handed back: the partition's next owner reads it again
        )
        .catch((err: unknown) => {
          const at = { topic: this.topic, partition: this.partition, subscriptionId: this.subscriptionId };
          this.deps.logger.error({ ...at, offset: record.offset, err }, 'lane backlog bookkeeping failed');
        });
    }
    this.next = offset + 1n;
    if (this.attachedAt !== undefined) {
      if (this.readAll) this.readTo(this.attachedAt);
      else this.updatePoint();
    } else if (this.next >= this.deps.offeredUpTo()) this.attach();
    else this.updatePoint();
  }

  private done(offset: bigint): void {
    // Ended (its subscription, or its partition): nothing is held or written for it any more.
    if (!this.inLane.delete(offset) || this.ended) return;
    this.updatePoint();
    if (this.attachedAt !== undefined) this.offered(this.deps.offeredUpTo());
  }

  /** The reading has caught up with the group consumer: it offers this subscription's events again from `next`. */
  private attach(): void {
    this.readTo(this.next);
  }

  /** Everything below `end` is read: the group consumer offers the subscription's events from there. */
  private readTo(end: bigint): void {
    this.next = end;
    this.attachedAt = end;
    this.stopReading();
    this.updatePoint();
    this.offered(this.deps.offeredUpTo());
  }

  /** the oldest offset it still answers for: a callback read back and not done, or what is not read yet */
  private point(): bigint | undefined {
    let at = this.readAll ? undefined : this.next;
    for (const o of this.inLane) if (at === undefined || o < at) at = o;
    return at;
  }

  /** Keeps the commit from passing the point (BacklogCommitGuard). */
  private updatePoint(holdCommit?: HoldCommit): void {
    this.guard.keep(this.point(), this.attachedAt, holdCommit);
  }

  /** Another backlog waits for a reading slot (reading-slots.ts): see BacklogReading.yieldSlot. */
  yieldSlot(): boolean {
    return this.reading.yieldSlot();
  }

  private stopReading(): void {
    this.reading.stop();
  }

  /**
   * Its subscription ended (cancelled, delivered once, refused): nothing of it is read or held any more. Told at
   * once, because a backlog that is not reading (waiting for room, or for a slot) would otherwise learn it only from
   * its next record, which may never come: it stayed, with its cursor and its metric series, until a restart.
   */
  subscriptionEnded(): void {
    if (!this.ended) this.finish();
  }

  /** Nothing left to read or hold: the subscription ended, or the reading caught up and the lane delivered it. */
  private finish(): void {
    this.end();
    this.guard.clear();
    this.deps.forget(this);
  }

  /** Stops reading for good; a handed-back partition's hold goes with its progress, and the next owner reads again. */
  end(): void {
    this.ended = true;
    this.signal.removeEventListener('abort', this.onHandBack);
    this.reading.close();
  }
}
