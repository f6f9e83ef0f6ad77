import type { ViewSpec } from '../kafka/types';

/**
 * Where a lane backlog stands, kept in the compacted `callback-backlogs` topic (key
 * `<subscription>/<topic>/<partition>`): the subscription's events of that partition from `from` on are the
 * backlog's, not yet delivered, up to `until` when the group consumer offers them again from there. With it, the
 * group consumer commits past a dead endpoint's events, and a bridge that takes the partition over reads them from
 * `from` (at least once), instead of every subscription of the partition getting everything since the oldest
 * undelivered event again.
 *
 * The bridge writes them as its backlogs move. The api writes one too, with the subscription, when a task is
 * subscribed to after it began (`Subscription.taskEventsFrom`): the task's events from its first one are owed to the
 * new subscription, whatever the bridge had already passed by.
 */
export interface BacklogCursor {
  subscriptionId: string;
  topic: string;
  partition: number;
  from: string;
  until?: string;
}

export function decodeBacklogCursor(value: string): BacklogCursor {
  const c = JSON.parse(value) as BacklogCursor;
  if (typeof c?.subscriptionId !== 'string' || typeof c.topic !== 'string' || typeof c.from !== 'string') {
    throw new Error('not a backlog cursor');
  }
  return c;
}

export const BACKLOG_CURSORS_VIEW: ViewSpec<BacklogCursor> = { topic: 'callbackBacklogs', decode: decodeBacklogCursor };

export const cursorKey = (subscriptionId: string, topic: string, partition: number) =>
  `${subscriptionId}/${topic}/${partition}`;
