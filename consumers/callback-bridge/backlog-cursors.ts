import type { Publisher, StateView } from '../../src/kafka/types';
import { pause } from '../../src/lib/abortable-sleep';
import { retryDelayMs } from '../../src/lib/backoff';
import type { Logger } from '../../src/logger';
import { cursorKey, type BacklogCursor } from '../../src/subscriptions/backlog-cursor';

/**
 * How long a backlog's new position waits before it is written: the cursor bounds what a crash sends again, so it
 * may lag; one write a second per backlog at most, however fast the lane delivers.
 */
export const CURSOR_LINGER_MS = 1000;

export interface CursorDeps {
  publisher: Publisher;
  /** the callback-backlogs topic */
  topic: string;
  logger: Logger;
  kafkaTimeoutMs: number;
}

interface Wanted {
  from?: bigint;
  until?: bigint;
  durable?: (from: bigint | undefined) => void;
}

/**
 * The cursor writer of one subscription's backlogs on one partition, for as long as this member owns it: the latest
 * position is written after a linger, one write at a time, so a backlog that ends and the next one of the same key
 * never race; a failed write is tried again with backoff. Writes stop when the partition is handed back (its next
 * owner writes its own). `durable` is told the position once it is in Kafka (undefined: the cursor was removed).
 */
export class CursorWriter {
  private wanted: Wanted | undefined;
  private writing = false;

  constructor(
    private readonly at: { subscriptionId: string; topic: string; partition: number },
    private readonly signal: AbortSignal,
    private readonly deps: CursorDeps,
  ) {}

  /** The position to keep: the backlog's from `from` (undefined: it has none left), given back at `until`. */
  save(from: bigint | undefined, until: bigint | undefined, durable?: (from: bigint | undefined) => void): void {
    this.wanted = { from, until, durable };
    if (!this.writing) void this.write();
  }

  private async write(): Promise<void> {
    this.writing = true;
    try {
      for (let failures = 0; this.wanted && !this.signal.aborted;) {
        await pause(failures === 0 ? CURSOR_LINGER_MS : retryDelayMs(failures, 200, 5000), this.signal);
        const wanted = this.wanted;
        if (!wanted || this.signal.aborted) return;
        this.wanted = undefined;
        try {
          await this.deps.publisher.publish([this.record(wanted)], { timeoutMs: this.deps.kafkaTimeoutMs });
          failures = 0;
          wanted.durable?.(wanted.from);
        } catch (err) {
          failures += 1;
          this.wanted ??= wanted;
          this.deps.logger.warn({ ...this.at, err }, 'could not write a lane backlog cursor; trying again');
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private record(wanted: Wanted) {
    const { subscriptionId, topic, partition } = this.at;
    const key = cursorKey(subscriptionId, topic, partition);
    if (wanted.from === undefined) return { topic: this.deps.topic, key, value: null };
    const cursor: BacklogCursor = {
      subscriptionId,
      topic,
      partition,
      from: wanted.from.toString(),
      until: wanted.until?.toString(),
    };
    return { topic: this.deps.topic, key, value: JSON.stringify(cursor) };
  }
}

/** The cursors of one partition, from this process's view of the topic: the backlogs a new owner reads on. */
export function cursorsOf(view: StateView<BacklogCursor>, topic: string, partition: number): BacklogCursor[] {
  const found: BacklogCursor[] = [];
  for (const c of view.values()) if (c.topic === topic && c.partition === partition) found.push(c);
  return found;
}
