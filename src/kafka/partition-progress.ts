import { setMaxListeners } from 'node:events';
import type { CommitHold } from './types';

/**
 * What a group member has started and finished in one partition, and how far it may commit: up to its oldest
 * unfinished record, so a crash re-delivers everything not finished (at least once), and never a record twice while
 * this member keeps the partition. One commit is in flight at a time; the next carries everything finished meanwhile
 * (a commit per record would flood the coordinator, and kafkajs's request queue, at thousands of records a second).
 */
export class PartitionProgress {
  /** offsets started but not finished */
  readonly pending = new Set<bigint>();
  /**
   * One signal for every record of this progress, not one per record (an AbortController and its signal per record
   * were 3 % of a busy process's CPU): a hand-back always takes all of them, and the progress is dropped after it.
   */
  private readonly handOff = new AbortController();
  /** offsets finished above `finishedBelow`: a re-fetch after a rebalance must not run them again */
  private readonly done = new Set<bigint>();
  /** every offset below it that was started has finished (`low` when `done` was last pruned) */
  private finishedBelow = -1n;
  /** offsets whose work goes on after their records finished (CommitHold): the commit stays at or below each */
  private readonly holds = new Set<{ offset: bigint }>();
  /** one past the highest offset started */
  private next: bigint;
  /** the offset last committed (the next one to read) */
  private committed = -1n;
  /** a commit is in flight; cleared in the same turn its loop decides to stop, so no finish falls between */
  private committing = false;
  private commitAgain = false;

  constructor(firstOffset: bigint) {
    this.next = firstOffset;
    // Each record in flight may listen (a runner's task links it to its own signal): as many as the handler's
    // concurrency, not a leak.
    setMaxListeners(Infinity, this.handOff.signal);
  }

  /** aborts, with the hand-back's reason, when the records still unfinished are handed back */
  get signal(): AbortSignal {
    return this.handOff.signal;
  }

  /** finished (below the oldest unfinished offset, or since) or running: kafkajs re-fetched it, not to start again */
  seen(offset: bigint): boolean {
    return offset < this.finishedBelow || this.pending.has(offset) || this.done.has(offset);
  }

  start(offset: bigint): void {
    this.pending.add(offset);
    if (offset + 1n > this.next) this.next = offset + 1n;
  }

  finish(offset: bigint): void {
    this.pending.delete(offset);
    this.done.add(offset);
  }

  /** Forgets finished offsets below `low`: `seen` answers for them from `finishedBelow`, however long a hold lasts. */
  private pruneDone(): bigint {
    const low = this.low;
    if (low <= this.finishedBelow) return low;
    this.finishedBelow = low;
    for (const o of this.done) if (o < low) this.done.delete(o);
    return low;
  }

  /** the oldest unfinished offset, or (with none) one past the highest started: what a commit may go up to */
  get low(): bigint {
    // Without a copy of the set: a bridge holds up to CALLBACK_CONCURRENCY records, and every commit asks.
    let low: bigint | undefined;
    for (const o of this.pending) if (low === undefined || o < low) low = o;
    return low ?? this.next;
  }

  /**
   * Keeps the commit at or below `offset` until released, although the records there may finish: work taken out of
   * the record's handler (a callback lane that reads its backlog again from Kafka) that a crash must not skip.
   * `changed` is called when a move or the release may let the commit go further.
   */
  hold(offset: bigint, changed: () => void): CommitHold {
    const h = { offset };
    this.holds.add(h);
    return {
      moveTo: (to) => {
        if (to <= h.offset || !this.holds.has(h)) return;
        h.offset = to;
        changed();
      },
      release: () => {
        if (this.holds.delete(h)) changed();
      },
    };
  }

  /** records running, or work held past its records (a hold): the lag counts from `commitPoint` */
  get unfinished(): boolean {
    return this.pending.size > 0 || this.holds.size > 0;
  }

  /** how far a commit may go: `low`, or below it the lowest hold */
  get commitPoint(): bigint {
    return this.heldBelow(this.low);
  }

  private heldBelow(low: bigint): bigint {
    let point = low;
    for (const h of this.holds) if (h.offset < point) point = h.offset;
    return point;
  }

  /**
   * Hands every unfinished record back: the one signal all of this progress's records were given aborts with
   * `reason` (a finished record's handler is done with it). The progress is dropped after this, never reused.
   */
  handBack(reason: Error): void {
    this.handOff.abort(reason);
  }

  /**
   * Commits up to `commitPoint` with `send`, unless a commit is in flight: then that one commits again when it is done.
   * Resolves when this call's commits are done; a failed commit is left for the next finished record to retry.
   * `current()` says whether this progress still belongs to the member (false once the partition was revoked).
   */
  commit(send: (offset: bigint) => Promise<void>, current: () => boolean): Promise<void> | undefined {
    if (this.committing) {
      this.commitAgain = true;
      return undefined;
    }
    this.committing = true;
    return this.commitWhileBehind(send, current);
  }

  private async commitWhileBehind(send: (offset: bigint) => Promise<void>, current: () => boolean): Promise<void> {
    try {
      do {
        this.commitAgain = false;
        const low = this.heldBelow(this.pruneDone());
        if (low <= this.committed) return;
        const previous = this.committed;
        this.committed = low;
        try {
          await send(low);
        } catch (err) {
          // The next finished record commits again; until then a crash only re-delivers finished work.
          if (this.committed === low) this.committed = previous;
          throw err;
        }
      } while (this.commitAgain && current());
    } finally {
      // In the turn the loop stops: a record finished after this starts a commit of its own.
      this.committing = false;
    }
  }
}
