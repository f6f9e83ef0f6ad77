import type { Consumer, EachMessagePayload, Kafka } from 'kafkajs';
import { retryDelayMs } from '../lib/backoff';
import { settlesWithin } from '../lib/settles-within';
import type { Logger } from '../logger';
import { CommittedOffsets } from './committed-offsets';
import { recoverFromFatalCrash } from './crash-recovery';
import { handleUntilDone } from './handle-until-done';
import { ReplacedMembers } from './stale-member';
import { continuesFrom, type JoinedAs } from './join-continuity';
import { InFlightSlots } from './in-flight-slots';
import { asIncoming } from './fetched-records';
import { heldLag, LagProbe, tp, type FetchedTo, type LagSources } from './lag-probe';
import { watchMembership } from './membership-events';
import { PartitionProgress } from './partition-progress';
import type { GroupConsumerHandle, GroupConsumerOptions } from './types';

/** What kafkajs tells of a completed join (its GROUP_JOIN event). */
interface GroupJoin {
  memberId: string;
  memberAssignment: Record<string, number[]>;
  /** from the join's start to its end, ms */
  duration: number;
}

/** The reason given to a handler's signal when its work is handed back rather than cancelled. */
export class HandBack extends Error {
  constructor(why: 'shutdown' | 'revoked') {
    super(`work handed back: ${why}`);
    this.name = 'HandBack';
  }
}

/**
 * A consumer-group member that handles up to maxInFlight records at once, in
 * any order, and commits a partition's offset only up to its oldest
 * unfinished record: a crash re-delivers everything not finished (at least
 * once). A handler that fails is run again, with backoff, until it succeeds or
 * its work is handed back: a record is never skipped. A record already
 * running or finished is not started again when kafkajs re-fetches it after a
 * rebalance that left this member its partition. kafkajs sends heartbeats only
 * between handler calls, so a handler waiting for a free slot heartbeats itself.
 */
export async function runGroupConsumer(
  kafka: Kafka,
  options: GroupConsumerOptions,
  logger: Logger,
  highWatermarks?: LagSources['highWatermarks'],
): Promise<GroupConsumerHandle> {
  let consumer: Consumer;
  const work = new Map<string, PartitionProgress>();
  const slots = new InFlightSlots(options.maxInFlight);
  const running = new Set<Promise<void>>();
  const commits = new Set<Promise<void>>();
  let stopping = false;
  /** when the latest fetch was answered: everything it brought was committed before */
  let fetchedAt = 0;
  /** per partition: its high watermark at the latest fetch, and the offset that fetch read up to (markers too) */
  const fetched = new Map<string, FetchedTo>();

  /** counts assignments: an answer about the partitions of an older one is not acted on */
  let joins = 0;
  /** the member id and generation of the latest join (join-continuity.ts) */
  let joinedAs: JoinedAs | undefined;
  /** members kafkajs replaced after a crash, taken out of the group (stale-member.ts) */
  const replaced = new ReplacedMembers(kafka, options.groupId, logger);
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 10000;
  /** the partitions of the latest assignment */
  let assignment = new Set<string>();
  /** where committed offsets are read: the assignment's (announce) and the lag probe's, kept apart */
  const announceOffsets = new CommittedOffsets(kafka, options.groupId);
  const probeOffsets = new CommittedOffsets(kafka, options.groupId);
  /** progresses made by an assignment (announce) rather than by a record */
  const announced = new WeakSet<PartitionProgress>();
  /** announces under way: a stop waits for their offset reads before it closes the admin they use */
  const announcing = new Set<Promise<void>>();
  const probe =
    highWatermarks && new LagProbe({ highWatermarks, committed: (t) => probeOffsets.read(t) }, options.topics, logger);

  /** partitions with a commit due at the next turn of the event loop */
  const due = new Set<PartitionProgress>();

  /**
   * Commits a partition up to its oldest unfinished record, at the next turn of the event loop: records that finish
   * in the same turn (the bridge's callbacks whose history was written in one transaction) share one commit, where
   * committing at the first would send a second for the rest. PartitionProgress coalesces the commits after that.
   */
  function commit(topic: string, partition: number, progress: PartitionProgress): void {
    if (due.has(progress)) return;
    due.add(progress);
    const committing = new Promise((resolve) => setImmediate(resolve)).then(() => {
      due.delete(progress);
      // A partition handed back on shutdown is still this member's until it leaves: what finished is committed,
      // also by a commit already in flight when the stop came.
      const ours = () => stopping || work.get(tp(topic, partition)) === progress;
      if (!ours()) return;
      const send = (offset: bigint) => consumer.commitOffsets([{ topic, partition, offset: offset.toString() }]);
      return progress.commit(send, ours)?.catch((err) => {
        logger.debug({ topic, partition, err }, 'offset commit failed; it is tried again with the next record');
      });
    });
    commits.add(committing);
    void committing.finally(() => commits.delete(committing));
  }

  function handBack(key: string, why: 'shutdown' | 'revoked'): void {
    work.get(key)?.handBack(new HandBack(why));
    work.delete(key);
  }

  /** Replaces a member kafkajs gave up on: its work is handed back, as on a revocation, and a fresh member joins. */
  function restart(crashed: Consumer): void {
    if (stopping || consumer !== crashed) return;
    options.membership?.lost();
    for (const key of [...work.keys()]) handBack(key, 'revoked');
    start().catch((err: unknown) => {
      logger.warn({ groupId: options.groupId, err }, 'consumer did not restart; trying again');
      setTimeout(() => restart(consumer), 1000).unref();
    });
  }

  async function start(): Promise<void> {
    const member = kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      sessionTimeout: sessionTimeoutMs,
      // kafkajs's default, set here because the membership lease relies on it: a member that does not rejoin keeps
      // its assignment until this passes, or its session ends, whichever comes first (membership-lease.ts).
      rebalanceTimeout: Math.max(60000, sessionTimeoutMs),
      heartbeatInterval: 1000,
      maxWaitTimeInMs: 1000,
    });
    consumer = member;
    member.on(member.events.GROUP_JOIN, onJoin);
    member.on(member.events.FETCH, () => {
      fetchedAt = Date.now();
    });
    member.on(member.events.END_BATCH_PROCESS, ({ payload }) => {
      const { topic, partition } = payload;
      fetched.set(tp(topic, partition), {
        topic,
        partition,
        highWatermark: BigInt(payload.highWatermark),
        to: BigInt(payload.lastOffset) + 1n,
      });
    });
    if (options.membership) watchMembership(member, options.membership);
    member.on(member.events.CRASH, () => {
      if (!stopping) replaced.replaced(joinedAs?.memberId);
    });
    recoverFromFatalCrash(member, logger, options.groupId, () => restart(member));
    try {
      await member.connect();
      for (const topic of options.topics) await member.subscribe({ topic, fromBeginning: true });
      await member.run({ autoCommit: false, eachMessage });
    } catch (err) {
      await member.disconnect().catch(() => undefined);
      throw err;
    }
  }

  function onJoin({ payload }: { payload: GroupJoin & { generationId?: number } }): void {
    // A member dropped by the coordinator, or one that missed a generation, may have had its partitions taken by
    // another meanwhile, who went on from the committed offset: work begun before is handed back even where the
    // partition came back to it, or it would be done again after the other's.
    const now = { memberId: payload.memberId, generationId: payload.generationId };
    const rejoined = !continuesFrom(joinedAs, now);
    if (rejoined && joinedAs?.memberId === now.memberId) {
      logger.info(
        { groupId: options.groupId, ...now, before: joinedAs.generationId },
        'joined after a missed generation',
      );
    }
    joinedAs = now;
    replaced.joined();
    options.memberRecord?.joined(options.groupId, now.memberId);
    const assigned = new Set<string>();
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const p of partitions) assigned.add(tp(topic, p));
    }
    for (const key of [...fetched.keys()]) if (!assigned.has(key)) fetched.delete(key);
    for (const key of [...work.keys()]) {
      if (assigned.has(key) && !rejoined) continue;
      handBack(key, 'revoked');
      const [topic, partition] = key.split('\u0000');
      options.onRevoked?.(topic, Number(partition));
    }
    // After the hand-back: callbacks waiting for the lease must not see it held with work that is no longer theirs.
    options.membership?.joined(Date.now() - payload.duration, sessionTimeoutMs);
    joins += 1;
    assignment = assigned;
    const fresh = Object.entries(payload.memberAssignment).filter(([, ps]) => ps.length > 0);
    if (options.onAssigned && fresh.length > 0) {
      const told = announce(
        consumer,
        joins,
        fresh.map(([topic]) => topic),
      ).finally(() => announcing.delete(told));
      announcing.add(told);
    }
  }

  /**
   * Tells onAssigned of the newly assigned partitions, at their committed offsets, by making their progress before a
   * record does: a handler may owe a partition work that no new record would ever start (the bridge's backlogs).
   * Tried a few times; a partition not told is still handled as its records come.
   */
  async function announce(member: Consumer, join: number, topics: string[]): Promise<void> {
    const onAssigned = options.onAssigned;
    if (!onAssigned) return;
    const current = () => !stopping && consumer === member && joins === join;
    for (let failures = 1; failures <= 5 && current(); failures += 1) {
      try {
        const offsets = await announceOffsets.read(topics);
        if (!current()) return;
        for (const { topic, partitions } of offsets) {
          for (const { partition, offset } of partitions) {
            const key = tp(topic, partition);
            const at = BigInt(offset);
            // Never committed: its records, from the beginning, start the progress if there are any.
            if (at < 0n || !assignment.has(key) || work.has(key)) continue;
            const progress = new PartitionProgress(at);
            announced.add(progress);
            work.set(key, progress);
            onAssigned(topic, partition, progress.signal, at);
          }
        }
        return;
      } catch (err) {
        const retryInMs = retryDelayMs(failures, 200, 5000);
        logger.warn({ groupId: options.groupId, err, retryInMs }, 'could not read the committed offsets; trying again');
        await new Promise((resolve) => setTimeout(resolve, retryInMs).unref());
      }
    }
  }

  async function eachMessage({ topic, partition, message, heartbeat }: EachMessagePayload): Promise<void> {
    if (stopping) return;
    const key = tp(topic, partition);
    const offset = BigInt(message.offset);
    if (work.get(key)?.seen(offset)) return;
    const member = consumer;
    const before = work.get(key);
    await slots.acquire(heartbeat);
    // Handed back while it waited for a slot (a stop, a revocation, this member replaced): the record is the next
    // owner's. Started here, it would begin a new progress above the unfinished records before it, and its commit
    // would skip them.
    const now = work.get(key);
    // A progress the assignment made (announce) while the partition's first record waited is that record's too:
    // dropped, the record would be skipped, since kafkajs hands it out once and later records commit past it.
    const madeMeanwhile = before === undefined && now !== undefined && announced.has(now);
    if (stopping || consumer !== member || (now !== before && !madeMeanwhile)) {
      slots.release();
      return;
    }
    const w = now ?? new PartitionProgress(offset);
    work.set(key, w);
    w.start(offset);
    const signal = w.signal;
    const record = { ...asIncoming(topic, partition, message), receivedAt: fetchedAt || Date.now() };
    const holdCommit = (at: bigint) => w.hold(at, () => commit(topic, partition, w));
    const job: Promise<void> = handleUntilDone(options.handle, record, signal, holdCommit, logger)
      .finally(() => {
        slots.release();
        // A handed-back record stays uncommitted, so the next owner handles it.
        if (signal.aborted || work.get(key) !== w) return;
        w.finish(offset);
        commit(topic, partition, w);
      })
      .finally(() => running.delete(job));
    running.add(job);
  }

  /** At most 10 s in all (the grace included): the process's own stop is bounded at 15 s (src/main.ts). */
  async function stopOnce(): Promise<void> {
    stopping = true;
    const began = Date.now();
    // Records under way finish (and are committed) for up to the grace; only those left are handed back.
    if (options.stopGraceMs && running.size > 0) await settlesWithin(Promise.allSettled(running), options.stopGraceMs);
    const records = [...work.values()].reduce((n, w) => n + w.pending.size, 0);
    for (const key of [...work.keys()]) handBack(key, 'shutdown');
    // Said, so an operator knows why work is done again after a restart (a task run again, a callback sent again).
    if (records > 0)
      logger.info({ groupId: options.groupId, records }, 'stopped; records still running were handed back');
    const handedBack = Promise.allSettled([...running]).then(() => Promise.allSettled([...commits]));
    await settlesWithin(handedBack, Math.max(0, 10000 - (Date.now() - began)));
    // An offset read in flight would connect the admin again after its disconnect (kafkajs reconnects per request).
    const asking = Promise.allSettled([...announcing, probe?.stop()]);
    await settlesWithin(asking, Math.max(0, 10000 - (Date.now() - began)));
    await Promise.all([
      consumer.disconnect().catch(() => undefined),
      announceOffsets.close(),
      probeOffsets.close(),
      replaced.stop(),
    ]);
  }

  // A member of this process's previous run, killed, so it never left: the coordinator keeps it, and this first join
  // waits until its session ends. It is taken out of the group as a replaced member is.
  const previous = options.memberRecord?.previous(options.groupId);
  if (previous !== undefined) replaced.replaced(previous, 'the previous run');
  try {
    await start();
  } catch (err) {
    // A failed start leaves nothing running behind it (start-up tries again): the leave's retries neither.
    await replaced.stop();
    throw err;
  }
  probe?.start();
  let stopped: Promise<void> | undefined;
  return {
    lag: () => heldLag(assignment, fetched, work, probe),
    stop: () => (stopped ??= stopOnce()),
  };
}
