import type { Admin } from 'kafkajs';
import type { KafkaHealth } from './kafka-health';

/** How often the brokers the cluster names are asked for again: a rolling restart may give them new addresses. */
const REFRESH_MS = 60000;

/**
 * The brokers a Kafka client bootstraps from, and the health probes ask: the bootstrap list, then the brokers the
 * cluster's metadata names (their advertised addresses, which clients talk to once they have read it). Every producer
 * made anew (after a failed transaction) bootstraps again: through an alias alone (a load balancer, a DNS name) that
 * went away while the brokers served, it could not, and every write failed.
 */
export class NamedBrokers {
  private forClients: string[];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly bootstrap: string[],
    private readonly health: KafkaHealth,
  ) {
    this.forClients = [...bootstrap];
  }

  /** kafkajs's `brokers`: asked at every bootstrap. */
  readonly list = (): string[] => this.forClients;

  /** The brokers the cluster names now replace those it named before. */
  learn(brokers: { host: string; port: number }[]): void {
    this.health.alsoProbe(brokers.map((b) => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`));
    // kafkajs splits a bootstrap address at its first colon: an IPv6 host is left to the metadata, as it was.
    const named = brokers.filter((b) => !b.host.includes(':')).map((b) => `${b.host}:${b.port}`);
    this.forClients = [...new Set([...this.bootstrap, ...named])];
  }

  /** Learns `brokers` (as the start found them), then asks again every REFRESH_MS; a refresh that fails keeps them. */
  start(admin: Admin, brokers: { host: string; port: number }[]): void {
    this.learn(brokers);
    this.timer = setInterval(() => {
      admin.describeCluster().then(
        ({ brokers }) => this.learn(brokers),
        () => undefined,
      );
    }, REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }
}
