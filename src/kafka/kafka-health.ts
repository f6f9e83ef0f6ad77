import { pingBroker } from './broker-ping';

/**
 * How long a broker has to answer a ping. Longer than the probe interval: a broker on a busy machine (a GC pause, both
 * cores taken) must not be called down while it still serves, and a probe in flight holds back the next one.
 */
const ANSWER_TIMEOUT_MS = 2000;

/**
 * Probes in a row that got no answer in time before a broker that still takes connections is called down. One was
 * enough on a quiet machine; on a loaded one (both cores busy, the broker's JVM among them) a 2 s answer was missed
 * now and then, and every write was refused for a second while Kafka served.
 */
const SILENT_PROBES_FOR_DOWN = 2;

/**
 * Knows whether any broker serves, a bootstrap one or one the cluster named (alsoProbe): within about a second when
 * all are down (the connection is refused), within SILENT_PROBES_FOR_DOWN probes when they hang (a stopped process
 * still has its connections accepted by the kernel, so a connect alone said "up" for a broker that answered nothing).
 * Requests that need Kafka consult it so they fail fast with 503 instead of waiting out the client's retries while
 * the brokers are down.
 */
export class KafkaHealth {
  private reachable = true;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private silentProbes = 0;
  private brokers: string[];

  constructor(
    private readonly bootstrap: string[],
    private readonly intervalMs = 1000,
    private readonly answerTimeoutMs = ANSWER_TIMEOUT_MS,
  ) {
    this.brokers = [...bootstrap];
  }

  get up(): boolean {
    return this.reachable;
  }

  start(): void {
    this.timer = setInterval(() => void this.probe(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Brokers the cluster's metadata names (named-brokers.ts), probed besides the bootstrap ones, replacing those it
   * named before: a bootstrap address that is only an alias going away leaves the brokers serving.
   */
  alsoProbe(brokers: string[]): void {
    this.brokers = [...new Set([...this.bootstrap, ...brokers])];
  }

  /** Lets a failed write mark Kafka down before the next probe does. */
  markDown(): void {
    this.reachable = false;
  }

  async probe(): Promise<boolean> {
    if (this.probing) return this.reachable;
    this.probing = true;
    try {
      const results = await Promise.all(this.brokers.map((b) => pingBroker(b, this.answerTimeoutMs)));
      if (results.includes('answered')) {
        this.silentProbes = 0;
        this.reachable = true;
      } else if (results.includes('silent')) {
        this.silentProbes += 1;
        if (this.silentProbes >= SILENT_PROBES_FOR_DOWN) this.reachable = false;
      } else {
        this.reachable = false;
      }
    } finally {
      this.probing = false;
    }
    return this.reachable;
  }
}
