import type { Kafka } from 'kafkajs';
import { pause } from '../lib/abortable-sleep';
import { settlesWithin } from '../lib/settles-within';
import type { Logger } from '../logger';
import { clusterFactory } from './kafkajs-cluster-factory';

/** The slice of kafkajs's internal Cluster and Broker that a LeaveGroup needs (kafkajs is pinned, see package.json). */
interface CoordinatorCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(lookup: { groupId: string }): Promise<{
    leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown>;
  }>;
}

/** What answers that the member is no longer in the group: nothing is left to remove. */
const GONE = new Set(['UNKNOWN_MEMBER_ID', 'GROUP_ID_NOT_FOUND']);

/**
 * Where a process keeps the member id of each of its groups' latest join, to find it again in its next run: a run
 * that was killed never left its groups, and the first join of the next waits for that member's session to end.
 */
export interface GroupMemberRecord {
  /** the member the previous run of this process last joined `groupId` as, if known */
  previous(groupId: string): string | undefined;
  joined(groupId: string, memberId: string): void;
}

const RETRY_MS = 500;
/** Given up after this (an outage this long): the coordinator then expires the member a session after it is back. */
const GIVE_UP_AFTER_MS = 10 * 60000;

interface StaleMember {
  groupId: string;
  memberId: string;
  /** whose member it is, for the log */
  whose: string;
  /** aborted once the member cannot hold anything up any longer (the consumer joined again, or stopped) */
  signal: AbortSignal;
}

/**
 * Takes a member out of its group on behalf of a consumer kafkajs has replaced. A consumer that crashes while the
 * broker is away (its retries run out during an outage) is started again by kafkajs as a new member; the old member
 * could not leave, as the coordinator was unreachable, so the coordinator keeps it after coming back, and the new
 * member's join waits until that member's session expires: every group of the process resumed a whole session late
 * after a broker restart. kafkajs never uses a member id again once it has replaced its consumer, so leaving for it
 * is safe; the join that waits for it then completes at once. Never rejects: a failure is tried again until the
 * signal or the time limit, and a member that is already gone ends it.
 */
async function leaveStaleMember(kafka: Kafka, stale: StaleMember, logger: Logger): Promise<void> {
  const cluster = clusterFactory(kafka)({}) as CoordinatorCluster;
  const giveUpAt = Date.now() + GIVE_UP_AFTER_MS;
  try {
    while (!stale.signal.aborted && Date.now() < giveUpAt) {
      try {
        await cluster.connect();
        const coordinator = await cluster.findGroupCoordinator({ groupId: stale.groupId });
        await coordinator.leaveGroup({ groupId: stale.groupId, memberId: stale.memberId });
        logger.info({ groupId: stale.groupId, memberId: stale.memberId }, `left the group for ${stale.whose}`);
        return;
      } catch (err) {
        if (GONE.has((err as { type?: string }).type ?? '')) return;
        logger.debug({ groupId: stale.groupId, err }, `leaving the group for ${stale.whose} failed; trying again`);
      }
      await pause(RETRY_MS, stale.signal);
    }
  } finally {
    await cluster.disconnect().catch(() => undefined);
  }
}

/**
 * A group consumer's replaced members: each crash of its consumer (which kafkajs, or the group consumer, replaces
 * with a new member) takes the member of the latest join out of the group, until the process joins again or stops.
 * A member kafkajs got an id for but that crashed before its join was told (in SyncGroup) is not known here, and
 * still expires a session later, as before.
 */
export class ReplacedMembers {
  private leave: { memberId: string; done: AbortController; leaving: Promise<void> } | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly groupId: string,
    private readonly logger: Logger,
  ) {}

  /** The consumer crashed; `memberId` is the latest join's (undefined: it never joined, nothing to leave). */
  replaced(memberId: string | undefined, whose = 'a replaced consumer'): void {
    if (memberId === undefined || this.leave?.memberId === memberId) return;
    this.leave?.done.abort();
    const done = new AbortController();
    const leaving = leaveStaleMember(
      this.kafka,
      { groupId: this.groupId, memberId, whose, signal: done.signal },
      this.logger,
    );
    this.leave = { memberId, done, leaving };
  }

  /** A join completed: the coordinator no longer waits for any member this process had before. */
  joined(): void {
    this.leave?.done.abort();
    this.leave = undefined;
  }

  /** Ends any leave; a request in flight is waited for briefly, so no connection outlives the consumer's stop. */
  async stop(): Promise<void> {
    const leaving = this.leave?.leaving;
    this.joined();
    await settlesWithin(leaving, 2000);
  }
}
