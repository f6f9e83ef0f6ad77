/**
 * How "no callback starts after the cancel's 202" holds without a round trip to Kafka before every callback.
 *
 * A bridge starts a callback only while its subscriptions view is fresh: synced by a sync that began at most
 * SUBSCRIPTIONS_LEASE_MS (+ LEASE_SLACK_MS) ago, and a sync sees everything committed before it began. The api
 * answers a cancel CANCEL_SETTLE_MS after its own view applied the cancellation, so after the commit. A callback
 * that starts after the 202, at T > commit + CANCEL_SETTLE_MS, was allowed by a sync that began after
 * T - SUBSCRIPTIONS_LEASE_MS - LEASE_SLACK_MS, which is after the commit: that sync saw the cancellation.
 *
 * Only durations are compared, each on one process's clock, so the processes' clocks need not agree; the margin
 * between lease and settle time covers timers that fire late. Both roles read these constants: a setting per role
 * could disagree.
 */
export const SUBSCRIPTIONS_LEASE_MS = 100;

/** How much past its lease a bridge may still use a view: the await that ended the sync takes about this long. */
export const LEASE_SLACK_MS = 5;

/** What a cancel waits, after its write is applied, before it answers 202. */
export const CANCEL_SETTLE_MS = 250;
