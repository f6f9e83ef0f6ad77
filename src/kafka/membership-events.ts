import type { Consumer } from 'kafkajs';
import type { MembershipLease } from './membership-lease';

/**
 * Feeds a lease what kafkajs tells of the member's session: each answered heartbeat (as of when it was sent) and
 * each rebalance it sees begin. Joins are told by the group consumer, which knows the session timeout.
 */
export function watchMembership(member: Consumer, lease: MembershipLease): void {
  // kafkajs tells a heartbeat's success without its send time; the request event that precedes it has it (heartbeats
  // are one at a time, so the latest Heartbeat request answered is the one that succeeded). Its `createdAt` (queued)
  // rather than `sentAt`, which is taken after the write: a stall between the two would lengthen the lease.
  let heartbeatSentAt = Number.NEGATIVE_INFINITY;
  member.on(member.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'Heartbeat') heartbeatSentAt = payload.createdAt;
  });
  member.on(member.events.HEARTBEAT, () => lease.heartbeat(heartbeatSentAt));
  // kafkajs tells this as it goes to rejoin: from then on its partitions may be given to another member.
  member.on(member.events.REBALANCING, () => lease.lost());
  // A crashed consumer has left the group (kafkajs disconnects, sending LeaveGroup, before it tells the crash).
  member.on(member.events.CRASH, () => lease.lost());
}
