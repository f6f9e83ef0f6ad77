import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { until } from './until';

export const FINAL_EVENTS = ['task.succeeded', 'task.failed', 'task.cancelled'];

export interface LoggedEvent {
  partition: number;
  offset: number;
  /** the CloudEvents id header; the bridge derives a callback's webhook-id from it */
  id: string;
  kind: string;
  attempt: number;
  data: Record<string, unknown>;
}

/**
 * The whole task-events topic as a user's own kafkajs consumer sees it:
 * committed records only (`readUncommitted: false`, as the README tells
 * readers to do), every partition from the beginning, grouped by task id in
 * topic order.
 */
export class TaskEventLog {
  readonly byTask = new Map<string, LoggedEvent[]>();
  /** next offset to read, per partition, control records and aborted data included */
  private readonly position = new Map<number, number>();
  private consumer: Consumer | undefined;
  private readonly kafka: Kafka;

  constructor(
    brokers: string[],
    private readonly topic: string,
  ) {
    this.kafka = new Kafka({ brokers, clientId: 'test-event-log', logLevel: logLevel.NOTHING });
  }

  async start(): Promise<this> {
    const groupId = `test-event-log-${randomUUID()}`;
    const consumer = this.kafka.consumer({ groupId, readUncommitted: false, maxWaitTimeInMs: 500 });
    this.consumer = consumer;
    // A batch of only control records or aborted data never reaches eachMessage; this event still moves the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      this.advance(payload.partition, Number(payload.lastOffset) + 1);
    });
    await consumer.connect();
    await consumer.subscribe({ topic: this.topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = message.key?.toString() ?? '';
        const value = JSON.parse(message.value?.toString() ?? 'null');
        const events = this.byTask.get(key) ?? [];
        events.push({
          partition,
          offset: Number(message.offset),
          id: String(message.headers?.ce_id ?? ''),
          kind: value.event,
          attempt: value.attempt,
          data: value.data ?? {},
        });
        this.byTask.set(key, events);
        this.advance(partition, Number(message.offset) + 1);
      },
    });
    return this;
  }

  /** Waits until every committed record written so far has been read (the end offsets are taken now). */
  async catchUp(timeoutMs = 30000): Promise<void> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      // An open transaction holds the last stable offset back; the reader can only pass it once it ends.
      const ends = await admin.fetchTopicOffsets(this.topic);
      const read = () => ends.every((e) => (this.position.get(e.partition) ?? 0) >= Number(e.high));
      await until(async () => (read() ? true : undefined), timeoutMs, 100);
    } finally {
      await admin.disconnect();
    }
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }

  private advance(partition: number, next: number): void {
    if (next > (this.position.get(partition) ?? 0)) this.position.set(partition, next);
  }
}

/** How many final events each task has on the topic. */
export function finalsOf(events: LoggedEvent[] | undefined): number {
  return (events ?? []).filter((e) => FINAL_EVENTS.includes(e.kind)).length;
}

/**
 * What is wrong with one task's event order, or undefined when nothing is.
 * Valid: task.accepted first and only once; then runs, each opened by a
 * task.started with a higher attempt than the one before; a run's progress
 * and output carry its attempt, and its progress counts strictly up; exactly
 * one final event, last, carrying the attempt of the last run (a request
 * refused before any run, such as an invalid one, may end without a run).
 */
export function orderProblem(events: LoggedEvent[]): string | undefined {
  const kinds = events.map((e) => e.kind);
  if (kinds[0] !== 'task.accepted') return `starts with ${kinds[0]}`;
  if (kinds.filter((k) => k === 'task.accepted').length !== 1) return 'task.accepted more than once';
  if (finalsOf(events) !== 1) return `${finalsOf(events)} final events`;
  if (!FINAL_EVENTS.includes(kinds[kinds.length - 1])) return `ends with ${kinds[kinds.length - 1]}`;
  let attempt = 0;
  let current = 0;
  for (const e of events.slice(1)) {
    if (e.kind === 'task.started') {
      if (e.attempt <= attempt) return `task.started attempt ${e.attempt} after attempt ${attempt}`;
      attempt = e.attempt;
      current = 0;
    } else if (e.kind === 'task.progress' || e.kind === 'task.output') {
      if (e.attempt !== attempt) return `${e.kind} of attempt ${e.attempt} inside attempt ${attempt}`;
      const at = Number(e.data.current);
      if (e.kind === 'task.progress' && !(at > current)) return `progress ${at} after ${current} in attempt ${attempt}`;
      if (e.kind === 'task.progress') current = at;
    } else if (FINAL_EVENTS.includes(e.kind) && attempt > 0 && e.attempt !== attempt) {
      return `${e.kind} of attempt ${e.attempt} after attempt ${attempt} started`;
    }
  }
  return undefined;
}
