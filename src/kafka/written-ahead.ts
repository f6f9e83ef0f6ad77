import type { Logger } from '../logger';

/** How long the view's reading may trail a write of its own process before writers wait for it again. */
const AHEAD_LIMIT_MS = 5000;
/**
 * Writes shown ahead of a stuck reading, at most: past it, creations are shown only once read. A reading held by an
 * open transaction is let go within its timeout; one that is stuck for good must not grow this (and each fetch's walk
 * of it) forever.
 */
const AHEAD_MAX_KEYS = 10000;

interface Shown {
  partition: number;
  offset: bigint;
  /** ms since epoch: when it was shown */
  at: number;
}

/**
 * The records a state view's own process wrote and showed before its reading got to them (read-your-writes without
 * a read-back): key → where the record landed. Until the reading passes it, older records of the key are not
 * applied, so a key's value never goes back in the log. Oldest first (a Map keeps insertion order).
 */
export class WrittenAhead {
  private readonly shown = new Map<string, Shown>();
  /** the bound was reached and said so; said again only after it went below it */
  private fullTold = false;

  constructor(
    private readonly topic: string,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    return this.shown.size;
  }

  has(key: string): boolean {
    return this.shown.has(key);
  }

  /** The reading has not passed a write of this process's for AHEAD_LIMIT_MS: it is stuck or far behind. */
  get stuck(): boolean {
    const oldest = this.shown.values().next().value;
    return oldest !== undefined && Date.now() - oldest.at > AHEAD_LIMIT_MS;
  }

  get full(): boolean {
    return this.shown.size >= AHEAD_MAX_KEYS;
  }

  /**
   * Notes a written record as shown; false when the key already shows it or a later record of its own (then it is
   * not applied again).
   */
  note(key: string, partition: number, offset: bigint): boolean {
    const shown = this.shown.get(key);
    if (shown && shown.partition === partition && shown.offset >= offset) return false;
    // Deleted first, so the key moves to the end: the oldest entry stays first.
    this.shown.delete(key);
    this.shown.set(key, { partition, offset, at: Date.now() });
    return true;
  }

  /** true when a fetched record is the key's record shown ahead, or older than it: not applied again */
  covers(key: string, partition: number, offset: bigint): boolean {
    const shown = this.shown.get(key);
    if (!shown || shown.partition !== partition) return false;
    if (offset < shown.offset) return true;
    this.shown.delete(key);
    return offset === shown.offset;
  }

  /** Entries the reading has passed (a record compaction removed, say) hold nothing back any more. */
  forgetBefore(partition: number, next: bigint): void {
    for (const [key, shown] of this.shown) {
      if (shown.partition === partition && shown.offset < next) this.shown.delete(key);
    }
    if (!this.full) this.fullTold = false;
  }

  /** Once per time the bound is reached: creations answered from then on are not readable at once on this process. */
  tellFull(): void {
    if (this.fullTold) return;
    this.fullTold = true;
    const oldest = this.shown.values().next().value;
    const trailingMs = oldest === undefined ? 0 : Date.now() - oldest.at;
    this.logger.warn(
      { topic: this.topic, shownAhead: this.shown.size, trailingMs },
      'state view reading held (an open transaction?): writes of this process are shown once read',
    );
  }
}
