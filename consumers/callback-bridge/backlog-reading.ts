import type { IncomingRecord, PartitionReader, PartitionReading } from '../../src/kafka/types';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Logger } from '../../src/logger';
import type { DeliveryLane } from './delivery-lanes';
import type { ReadingSlots, SlotWaiter } from './reading-slots';

/** fetches in a row that may fail (about 3 s of the reader's backoff) before a reading gives its turn back */
const READING_GIVES_UP_AFTER = 5;

/** One reading of the backlog, from its opening to its stop. */
export interface ReadingTurn {
  reading?: PartitionReading;
  stopped: boolean;
}

export interface BacklogReadingDeps {
  reader: PartitionReader;
  logger: Logger;
  kafkaTimeoutMs: number;
  /** the bridge's turns at reading (reading-slots.ts) */
  slots: ReadingSlots;
}

/** What the reading reads for: its partition, and the backlog to tell of each record and of its turns. */
export interface ReadingOwner extends SlotWaiter {
  readonly topic: string;
  readonly partition: number;
  readonly subscriptionId: string;
}

/**
 * A lane backlog's turns at reading its partition (lane-backlog.ts): one reading at a time, with one of the bridge's
 * reading slots held from its opening until it stops, opened again with backoff when Kafka fails it. A record of a
 * turn that has stopped is stale: the backlog passes it over.
 */
export class BacklogReading {
  /** the reading under way (also while it opens) */
  private current: ReadingTurn | undefined;
  /** a record read that waits for room in the lane */
  private waiting: ((superseded?: boolean) => void) | undefined;
  /** a reading slot is the backlog's, from taking it until its reading stops */
  private slotHeld = false;
  private openFailures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly owner: ReadingOwner,
    private readonly deps: BacklogReadingDeps,
    private readonly onRecord: (turn: ReadingTurn, record: IncomingRecord) => Promise<void>,
  ) {}

  /** a reading is under way (also while it opens) */
  get active(): boolean {
    return this.current !== undefined;
  }

  /** a reading is under way, or waits to be opened again after a failure */
  get busy(): boolean {
    return this.current !== undefined || this.retryTimer !== undefined;
  }

  isCurrent(turn: ReadingTurn): boolean {
    return turn === this.current;
  }

  /** Opens a reading from `offset` once a reading slot is the backlog's (the slots resume it when one is free). */
  start(offset: bigint): void {
    if (!this.slotHeld && !this.deps.slots.take(this.owner)) return;
    this.slotHeld = true;
    void this.open(offset);
  }

  private async open(offset: bigint): Promise<void> {
    const turn: ReadingTurn = { stopped: false };
    this.current = turn;
    try {
      turn.reading = await this.deps.reader.open(
        {
          topic: this.owner.topic,
          partition: this.owner.partition,
          fromOffset: offset.toString(),
          onRecord: (record) => this.onRecord(turn, record),
          // A reading that keeps failing gives its turn back and is opened again later (failed's backoff).
          giveUpAfter: READING_GIVES_UP_AFTER,
          onError: (err) => this.failed(turn, err),
        },
        this.deps.kafkaTimeoutMs,
      );
    } catch (err) {
      this.failed(turn, err as Error);
      return;
    }
    // Stopped (rewound, given back, ended) while it opened: a later turn reads, if one is wanted.
    if (turn.stopped) {
      void turn.reading.stop();
      this.owner.resume();
      return;
    }
    this.openFailures = 0;
  }

  /**
   * A record of the reading waits for room in `lane`: resolves once the lane may have room (false), or true when the
   * reader offered the record again meanwhile, and that offer goes on.
   */
  waitForRoom(lane: DeliveryLane): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      // A reader that restarted offers its record again while the first offer waits here: the new offer goes on, and
      // the first one ends, so the reader it came from stops waiting for it.
      this.waiting?.(true);
      this.waiting = (later = false) => resolve(later);
      lane.wantRoom();
      // Only waiting: another backlog may read meanwhile, and this one reads on from here later.
      this.deps.slots.idle(this.owner);
    });
  }

  /** The lane may have room: a record waiting for it goes in. False if none waits. */
  resumeWaiting(): boolean {
    const go = this.waiting;
    if (!go) return false;
    this.waiting = undefined;
    go();
    return true;
  }

  private failed(turn: ReadingTurn, err: Error): void {
    if (turn !== this.current) return;
    this.stop();
    if (this.closed) return;
    this.openFailures += 1;
    const retryInMs = retryDelayMs(this.openFailures, 200, 5000);
    const { topic, partition, subscriptionId } = this.owner;
    const at = { topic, partition, subscriptionId };
    this.deps.logger.warn({ ...at, err, retryInMs }, 'could not read a lane backlog from Kafka; trying again');
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.owner.resume();
    }, retryInMs);
    this.retryTimer.unref();
  }

  /**
   * Another backlog waits for a reading slot: if this one's reading still only waits for room, it stops, to read on
   * once the lane has room (it has asked for it). False when it is reading again, or stopped already: it keeps its
   * turn.
   */
  yieldSlot(): boolean {
    if (!this.waiting || !this.slotHeld) return false;
    this.stop();
    return true;
  }

  /** Stops the reading under way, if any, and gives its slot back; a record waiting for room is let go. */
  stop(): void {
    const turn = this.current;
    this.current = undefined;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.();
    this.deps.slots.busy(this.owner);
    if (this.slotHeld) {
      this.slotHeld = false;
      this.deps.slots.give();
    }
    if (!turn) return;
    turn.stopped = true;
    // A reading still opening is stopped by open() once it is there.
    if (turn.reading) void turn.reading.stop();
  }

  /** For good: no reading opens again, and the backlog waits for no slot. */
  close(): void {
    this.closed = true;
    this.deps.slots.leave(this.owner);
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.stop();
  }
}
