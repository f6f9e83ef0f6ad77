import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PartitionLag } from '../kafka/types';

/** Seconds, from a millisecond answer to the slowest callback or task anyone should wait for. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const TASK_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

type HttpLabel = 'method' | 'route' | 'status_code';

/** Offsets of a partition a subscription's callback backlog has still to read (consumers/callback-bridge). */
export interface BacklogLag extends PartitionLag {
  subscription: string;
}

/** Subscriptions named in hookstream_callback_backlog_offsets at most; the others are summed as `other`. */
export const MAX_NAMED_BACKLOGS = 20;

/**
 * The largest backlogs by subscription, the rest summed per partition under `other`: a failing endpoint of every task
 * (each callbackUrl is a subscription of its own) made a series per task, growing with the failures of an incident.
 */
function boundedBacklogs(backlogs: BacklogLag[]): BacklogLag[] {
  const bySubscription = new Map<string, number>();
  for (const b of backlogs) bySubscription.set(b.subscription, (bySubscription.get(b.subscription) ?? 0) + b.lag);
  if (bySubscription.size <= MAX_NAMED_BACKLOGS) return backlogs;
  const named = new Set(
    [...bySubscription]
      .sort(([, a], [, b]) => b - a)
      .slice(0, MAX_NAMED_BACKLOGS)
      .map(([s]) => s),
  );
  return backlogs.map((b) => (named.has(b.subscription) ? b : { ...b, subscription: 'other' }));
}

export type TaskOutcome = 'succeeded' | 'failed' | 'cancelled';

/** What the roles report; each role sees only this interface, never prom-client. */
export interface ServiceMetrics {
  taskAccepted(): void;
  /** `seconds`: from this run's task.started to its final event; undefined for a task that ended without a run */
  taskFinished(outcome: TaskOutcome, type: string, seconds: number | undefined): void;
  callbackAttempt(outcome: string, seconds: number): void;
  /** the bridge's callback backlogs, read at each scrape until the returned function is called */
  watchCallbackBacklogs(backlogs: () => BacklogLag[]): () => void;
}

/**
 * One Prometheus registry per service instance (a test process runs several), with the process defaults and the
 * figures operators of a job system look at first: request latency, tasks in and out, callback outcomes, and how
 * far the consumer groups are behind. The lag is read from the consumers at scrape time, without asking Kafka,
 * so a scrape answers at once even while Kafka is down.
 */
export class Metrics implements ServiceMetrics {
  readonly registry = new Registry();
  private readonly http: Histogram<HttpLabel>;
  /**
   * Each request series, by route, method and status code. prom-client's observe with a label object builds the
   * object, a closure and the series' key string on every answer; a series made once and kept skips the first two,
   * and the nested maps are keyed by values the router and the parser hand over unchanged (no string is built).
   */
  private readonly httpSeries = new Map<string, Map<string, Map<number, Histogram.Internal<HttpLabel>>>>();
  private readonly accepted: Counter;
  private readonly finished: Counter<'outcome'>;
  private readonly taskDuration: Histogram<'type'>;
  private readonly attempts: Counter<'outcome'>;
  private readonly callbackDuration: Histogram;
  private readonly backlogSources = new Set<() => BacklogLag[]>();

  constructor(consumerLag: () => (PartitionLag & { group: string })[]) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.http = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP requests by method, route pattern and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.accepted = new Counter({ name: 'hookstream_tasks_accepted_total', help: 'Tasks accepted', registers });
    this.finished = new Counter({
      name: 'hookstream_tasks_finished_total',
      help: 'Tasks whose final event this process wrote, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.taskDuration = new Histogram({
      name: 'hookstream_task_duration_seconds',
      help: "From a run's task.started to its final event, by task type",
      labelNames: ['type'],
      buckets: TASK_BUCKETS,
      registers,
    });
    this.attempts = new Counter({
      name: 'hookstream_callback_attempts_total',
      help: 'Callback attempts by outcome (delivered, failed, refused, gone, dead-lettered)',
      labelNames: ['outcome'],
      registers,
    });
    this.callbackDuration = new Histogram({
      name: 'hookstream_callback_duration_seconds',
      help: 'Callback attempts, from the POST to its answer or failure',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'hookstream_kafka_consumer_lag',
      help: 'Records a consumer group of this process has not finished',
      labelNames: ['group', 'topic', 'partition'],
      registers,
      collect() {
        this.reset();
        for (const { group, topic, partition, lag } of consumerLag()) {
          this.set({ group, topic, partition: String(partition) }, lag);
        }
      },
    });
    const backlogSources = this.backlogSources;
    new Gauge({
      name: 'hookstream_callback_backlog_offsets',
      help: "Offsets of a partition a subscription's callback backlog has still to read back from Kafka",
      labelNames: ['subscription', 'topic', 'partition'],
      registers,
      collect() {
        this.reset();
        for (const { subscription, topic, partition, lag } of boundedBacklogs(
          [...backlogSources].flatMap((b) => b()),
        )) {
          this.inc({ subscription, topic, partition: String(partition) }, lag);
        }
      },
    });
  }

  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    this.httpSeriesOf(method, route, statusCode).observe(seconds);
  }

  /** The labels are bounded (route patterns, the methods Node parses, status codes), and so is this. */
  private httpSeriesOf(method: string, route: string, statusCode: number): Histogram.Internal<HttpLabel> {
    let byMethod = this.httpSeries.get(route);
    if (byMethod === undefined) this.httpSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(statusCode);
    if (series === undefined) {
      series = this.http.labels({ method, route, status_code: String(statusCode) });
      byStatus.set(statusCode, series);
    }
    return series;
  }

  taskAccepted(): void {
    this.accepted.inc();
  }

  taskFinished(outcome: TaskOutcome, type: string, seconds: number | undefined): void {
    this.finished.inc({ outcome });
    if (seconds !== undefined) this.taskDuration.observe({ type }, seconds);
  }

  callbackAttempt(outcome: string, seconds: number): void {
    this.attempts.inc({ outcome });
    if (outcome !== 'dead-lettered') this.callbackDuration.observe(seconds);
  }

  watchCallbackBacklogs(backlogs: () => BacklogLag[]): () => void {
    this.backlogSources.add(backlogs);
    return () => this.backlogSources.delete(backlogs);
  }
}
