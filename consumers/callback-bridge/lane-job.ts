import type { CommitHold } from '../../src/kafka/types';
import type { CallbackMessage } from './send-callback';

/** A callback as a lane holds it: the subscription's URL and secret are read at each attempt, never kept. */
export type CallbackParts = Omit<CallbackMessage, 'secret' | 'callbackUrl'> & {
  /** not sent from here: handed to the subscription's one deciding bridge (once-callbacks.ts) */
  handOn?: true;
};

/** Why a lane stopped working on a callback before it was done: its event goes back to the consumer group. */
export class LaneStopped extends Error {
  constructor() {
    super('delivery stopped: the event is handed back');
    this.name = 'LaneStopped';
  }
}

/**
 * Where a callback's event came from, for a lane that lets the callback go (onEvicted): read again from Kafka by a
 * backlog (lane-backlog.ts), or offered by the group consumer, whose record can hold the partition's commit.
 */
export type JobOrigin = { partition: string; offset: bigint } & (
  { backlog: { rewind(offset: bigint): void } } | { holdCommit: (offset: bigint) => CommitHold }
);

/** How a callback left its lane: done (delivered, refused, gone, dead-lettered, ended), or let go (evicted). */
export type LaneExit = 'done' | 'evicted';

/** One callback in a lane (delivery-lanes.ts), from its enqueueing to its exit. */
export interface LaneJob {
  message: CallbackParts;
  /** aborts when the event is handed back (partition revoked, shutdown) */
  signal: AbortSignal;
  origin: JobOrigin | undefined;
  /** performance.now() when it was queued: how far behind its lane is (DeliveryLane) */
  queuedAt: number;
  resolve(exit: LaneExit): void;
  reject(err: Error): void;
  /** a failing head taken over by a backlog (its promise already settled): told when it is done after all */
  adopted?: () => void;
}
