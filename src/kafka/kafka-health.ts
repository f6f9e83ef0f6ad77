import { connect } from 'node:net';

/**
 * Knows, within about a second, whether any bootstrap broker accepts
 * connections. Requests that need Kafka consult it so they fail fast with 503
 * instead of waiting out the client's retries while the broker is down.
 */
export class KafkaHealth {
  private reachable = true;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly brokers: string[],
    private readonly intervalMs = 1000,
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
      const results = await Promise.all(this.brokers.map((b) => tcpReachable(b, Math.min(1000, this.intervalMs))));
      this.reachable = results.some(Boolean);
    } finally {
      this.probing = false;
    }
    return this.reachable;
  }
}

function tcpReachable(broker: string, timeoutMs: number): Promise<boolean> {
  const i = broker.lastIndexOf(':');
  const host = broker.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(broker.slice(i + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
