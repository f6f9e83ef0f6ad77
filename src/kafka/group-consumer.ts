import type { Consumer, EachMessagePayload, Kafka } from 'kafkajs';
import type { Logger } from '../logger';
import { recoverFromFatalCrash } from './crash-recovery';
import type { ConsumerHandle, GroupConsumerOptions, IncomingRecord } from './types';

/** The reason given to a handler's signal when its work is handed back rather than cancelled. */
export class HandBack extends Error {
  constructor(why: 'shutdown' | 'revoked') {
    super(`work handed back: ${why}`);
    this.name = 'HandBack';
  }
}

interface PartitionWork {
  /** offsets started but not finished */
  pending: Map<bigint, AbortController>;
  /** one past the highest offset started */
  next: bigint;
  committed: bigint;
}

/**
 * A consumer-group member that handles up to maxInFlight records at once, in
 * any order, and commits a partition's offset only up to its oldest
 * unfinished record: a crash re-delivers everything not finished (at least
 * once). kafkajs sends heartbeats only between handler calls, so a handler
 * waiting for a free slot heartbeats itself.
 */
export async function runGroupConsumer(kafka: Kafka, options: GroupConsumerOptions, logger: Logger): Promise<ConsumerHandle> {
  let consumer: Consumer;
  const work = new Map<string, PartitionWork>();
  const slots = { free: options.maxInFlight, waiters: [] as (() => void)[] };
  const running = new Set<Promise<void>>();
  let stopping = false;

  const tp = (topic: string, partition: number) => `${topic}\u0000${partition}`;

  async function commit(topic: string, partition: number): Promise<void> {
    const w = work.get(tp(topic, partition));
    if (!w) return;
    const low = w.pending.size > 0 ? [...w.pending.keys()].reduce((a, b) => (a < b ? a : b)) : w.next;
    if (low <= w.committed) return;
    w.committed = low;
    await consumer.commitOffsets([{ topic, partition, offset: low.toString() }]).catch((err: Error) => {
      logger.debug({ topic, partition, err: err.message }, 'offset commit failed; the record will be handled again');
    });
  }

  function release(): void {
    const next = slots.waiters.shift();
    if (next) next();
    else slots.free += 1;
  }

  async function acquire(heartbeat: () => Promise<void>): Promise<void> {
    if (slots.free > 0) { slots.free -= 1; return; }
    let granted = false;
    const got = new Promise<void>((resolve) => slots.waiters.push(() => { granted = true; resolve(); }));
    while (!granted) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([got, new Promise((r) => { timer = setTimeout(r, 1000); })]);
      clearTimeout(timer);
      if (!granted) await heartbeat();
    }
  }

  function handBackAll(why: 'shutdown' | 'revoked'): void {
    for (const w of work.values()) for (const ac of w.pending.values()) ac.abort(new HandBack(why));
  }

  /** Replaces a member kafkajs gave up on: its work is handed back, as on a revocation, and a fresh member joins. */
  function restart(crashed: Consumer): void {
    if (stopping || consumer !== crashed) return;
    handBackAll('revoked');
    work.clear();
    start().catch((err: Error) => {
      logger.warn({ groupId: options.groupId, err: err.message }, 'consumer did not restart; trying again');
      setTimeout(() => restart(consumer), 1000).unref();
    });
  }

  async function start(): Promise<void> {
    const member = kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      sessionTimeout: options.sessionTimeoutMs ?? 10000,
      heartbeatInterval: 1000,
      maxWaitTimeInMs: 1000,
    });
    consumer = member;
    member.on(member.events.GROUP_JOIN, onJoin);
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

  function onJoin({ payload }: { payload: { memberAssignment: Record<string, number[]> } }): void {
    const assigned = new Set<string>();
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const p of partitions) assigned.add(tp(topic, p));
    }
    for (const [key, w] of work) {
      if (assigned.has(key)) continue;
      for (const ac of w.pending.values()) ac.abort(new HandBack('revoked'));
      work.delete(key);
      const [topic, partition] = key.split('\u0000');
      options.onRevoked?.(topic, Number(partition));
    }
  }

  async function eachMessage({ topic, partition, message, heartbeat }: EachMessagePayload): Promise<void> {
    if (stopping) return;
    await acquire(heartbeat);
    const key = tp(topic, partition);
    const offset = BigInt(message.offset);
    const w = work.get(key) ?? { pending: new Map(), next: offset, committed: -1n };
    work.set(key, w);
    const ac = new AbortController();
    w.pending.set(offset, ac);
    if (offset + 1n > w.next) w.next = offset + 1n;
    const record: IncomingRecord = {
      topic, partition, offset: message.offset,
      key: message.key?.toString() ?? null,
      value: message.value?.toString() ?? null,
      headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])),
      timestamp: message.timestamp,
    };
    const job: Promise<void> = options.handle(record, ac.signal)
      .catch((err: Error) => logger.error({ topic, partition, offset: message.offset, err: err.message }, 'record handler failed'))
      .finally(() => {
        release();
        // A handed-back record stays uncommitted, so the next owner handles it.
        if (ac.signal.aborted && ac.signal.reason instanceof HandBack) return;
        w.pending.delete(offset);
        void commit(topic, partition);
      })
      .finally(() => running.delete(job));
    running.add(job);
  }

  await start();
  return {
    async stop() {
      stopping = true;
      handBackAll('shutdown');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...running]), new Promise((r) => { timer = setTimeout(r, 10000); })]);
      clearTimeout(timer);
      await consumer.disconnect().catch(() => undefined);
    },
  };
}
