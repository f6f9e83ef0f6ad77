import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config';
import { startLocalBroker, type LocalBroker } from '../../src/embedded-kafka/local-broker';
import { until } from './until';

/**
 * A broker of the test's own, from the Apache Kafka jars, that the test may
 * kill and restart on the same data and port. The shared test broker must
 * stay up for every other test file, so fault tests never touch it.
 */
export class OwnBroker {
  private broker: LocalBroker | undefined;
  /** made by the first start, so a skipped suite leaves nothing behind */
  private dataDir: string | undefined;
  private readonly cacheDir = loadConfig({}).cacheDir;
  bootstrap = '';

  get logFile(): string {
    return this.dataDir ? join(this.dataDir, 'broker.log') : '(not started)';
  }

  /** Starts it, on the port of the previous start when there was one (clients reconnect to the same address). */
  async start(): Promise<void> {
    this.dataDir ??= mkdtempSync(join(tmpdir(), 'hookstream-faults-'));
    this.broker = await startLocalBroker({ cacheDir: this.cacheDir, persistent: true, dataDir: this.dataDir });
    if (this.bootstrap && this.broker.bootstrap !== this.bootstrap) {
      throw new Error(`the broker came back on ${this.broker.bootstrap}, not ${this.bootstrap}: its port was taken`);
    }
    this.bootstrap = this.broker.bootstrap;
  }

  /** SIGKILL to the JVM itself: no shutdown, no flush, as a crash or an OOM kill would do. */
  async kill(): Promise<void> {
    const watchdog = this.broker?.pid;
    if (watchdog === undefined) return;
    const pgrep = spawnSync('pgrep', ['-P', String(watchdog), 'java'], { encoding: 'utf8' });
    const java = pgrep.stdout.trim().split('\n')[0];
    if (!java) throw new Error(`no JVM under the broker's watchdog ${watchdog}`);
    process.kill(Number(java), 'SIGKILL');
    // The watchdog exits as soon as its JVM is gone; stop() then only releases what the broker held (its data lock).
    await until(async () => (alive(watchdog) ? undefined : true), 20000, 50);
    await this.broker?.stop();
    this.broker = undefined;
  }

  /** SIGTERM, waiting for the controlled shutdown, as an operator's stop would. */
  async terminate(): Promise<void> {
    await this.broker?.stop();
    this.broker = undefined;
  }

  /** True once the broker's port accepts TCP connections (before the broker itself says it has started). */
  acceptsConnections(): Promise<boolean> {
    const [host, port] = this.bootstrap.split(':');
    return new Promise((resolve) => {
      const socket = connect({ host, port: Number(port) });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.setTimeout(1000, () => done(false));
    });
  }

  async remove(): Promise<void> {
    await this.terminate().catch(() => undefined);
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
