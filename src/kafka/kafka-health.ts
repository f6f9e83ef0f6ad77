import { brokerAnswers } from './broker-ping';

/**
 * How long a broker has to answer a ping. Longer than the probe interval: a broker on a busy machine (a GC pause, both
 * cores taken) must not be called down while it still serves, and a probe in flight holds back the next one.
 */
const ANSWER_TIMEOUT_MS = 2000;

/**
 * Knows whether any bootstrap broker serves: within about a second when it is
 * down (the connection is refused), within ANSWER_TIMEOUT_MS when it hangs
 * (a stopped process still has its connections accepted by the kernel, so a
 * connect alone said "up" for a broker that answered nothing). Requests that
 * need Kafka consult it so they fail fast with 503 instead of waiting out the
 * client's retries while the broker is down.
 */
export class KafkaHealth {
  private reachable = true;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly brokers: string[],
    private readonly intervalMs = 1000,
    private readonly answerTimeoutMs = ANSWER_TIMEOUT_MS,
  ) {}

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

  /** Lets a failed write mark Kafka down before the next probe does. */
  markDown(): void {
    this.reachable = false;
  }

  async probe(): Promise<boolean> {
    if (this.probing) return this.reachable;
    this.probing = true;
    try {
      const results = await Promise.all(this.brokers.map((b) => brokerAnswers(b, this.answerTimeoutMs)));
      this.reachable = results.some(Boolean);
    } finally {
      this.probing = false;
    }
    return this.reachable;
  }
}
