import type { CommitHold } from '../../src/kafka/types';
import type { CursorWriter } from './backlog-cursors';

type HoldCommit = (offset: bigint) => CommitHold;

/**
 * Keeps a partition's commit from passing a lane backlog's point (the oldest offset it still answers for): its
 * cursor once written (backlog-cursors.ts), a commit hold until then. A hold only rises; a point below both takes a
 * new hold, from the unfinished record there, before the old one goes.
 */
export class BacklogCommitGuard {
  private hold: CommitHold | undefined;
  /** where `hold` holds the commit */
  private heldAt = -1n;
  /** the position its cursor has in Kafka; the commit needs no hold from there on */
  private durableAt: bigint | undefined;

  constructor(
    private readonly cursor: CursorWriter,
    /** whose backlog, for the error a missing hold is */
    private readonly subscriptionId: string,
    /** the backlog's point now: a cursor written at or below it lets the hold go */
    private readonly pointNow: () => bigint | undefined,
    /** a backlog taken over from its cursor: that position is in Kafka already */
    durableAt?: bigint,
  ) {
    this.durableAt = durableAt;
  }

  /**
   * The point is `at` (undefined: nothing left to answer for), and the group consumer offers again from `attachedAt`.
   * `holdCommit` is the unfinished record's at `at`, when the point went below what is held or written.
   */
  keep(at: bigint | undefined, attachedAt: bigint | undefined, holdCommit?: HoldCommit): void {
    if (at === undefined) {
      this.release();
    } else if (this.hold && at >= this.heldAt) {
      this.hold.moveTo(at);
      this.heldAt = at;
    } else if (this.hold || this.durableAt === undefined || at < this.durableAt) {
      // Callers lower the point only with the record there in hand: anything else is a bug, not a state to go on.
      if (!holdCommit) throw new Error(`lane backlog of ${this.subscriptionId}: no hold can be taken at ${at}`);
      const old = this.hold;
      this.hold = holdCommit(at);
      this.heldAt = at;
      old?.release();
    }
    this.cursor.save(at, attachedAt, (written) => this.written(written));
  }

  /** Nothing left to hold or read: the hold goes, and the cursor is removed. */
  clear(): void {
    this.release();
    this.cursor.save(undefined, undefined);
  }

  /** Its cursor is in Kafka at `at`: from there on the commit needs no hold. */
  private written(at: bigint | undefined): void {
    this.durableAt = at;
    const now = this.pointNow();
    if (this.hold && at !== undefined && now !== undefined && at <= now) this.release();
  }

  private release(): void {
    this.hold?.release();
    this.hold = undefined;
  }
}
