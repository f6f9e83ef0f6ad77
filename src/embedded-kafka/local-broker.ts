import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PidLock } from '../lib/pid-lock';
import { readLog, spawnJvm, StartTimeout, waitForStart, type Jvm, type StartFailure } from './broker-jvm';
import { choosePorts } from './broker-ports';
import { formatStorage, lockDataDir, prepareDataDir, serverProperties } from './broker-storage';
import { KAFKA_VERSION } from './kafka-version';
import { LocalBrokerUnavailableError, resolveBrokerJars } from './local-broker-jars';

export interface LocalBrokerOptions {
  cacheDir: string;
  /** keep data across runs (npm start) or use a fresh folder removed on stop (tests) */
  persistent: boolean;
  /** tried first; a free port is taken when it is busy */
  preferredPort?: number;
  /** exactly this client port, never another (a client that was started before its broker) */
  port?: number;
  /** a persistent broker's folder; default `<cacheDir>/data/default` */
  dataDir?: string;
  /** how long the JVM may take to say it started; default 180 s, for Java on a busy machine */
  startTimeoutMs?: number;
  /** called every few seconds while the JVM starts */
  onWaiting?(elapsedMs: number, logFile: string): void;
}

export interface LocalBroker {
  readonly bootstrap: string;
  readonly logFile: string;
  /** its data folder, held by this process alone while it runs (a lock) */
  readonly dataDir: string;
  /** the watchdog shell's (broker-jvm.ts); the JVM is its child: signal that one to freeze or kill the broker */
  readonly pid: number | undefined;
  /** a controlled shutdown, then SIGKILL after `graceMs` (default 20 s) if the JVM has not ended */
  stop(graceMs?: number): Promise<void>;
  /** settles if the JVM ends on its own (killed, out of memory); never once stop() was called */
  readonly died: Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 180000;
/** starts retried because a chosen port was taken before the JVM bound it */
const MAX_PORT_RETRIES = 5;

/**
 * Starts a single-node KRaft broker from the official Apache Kafka jars.
 * Between choosing a free port and the JVM binding it another process may take
 * it: the JVM then fails to bind, and the start is tried again on other ports.
 */
export async function startLocalBroker(options: LocalBrokerOptions): Promise<LocalBroker> {
  const dataDir = prepareDataDir(options);
  let lock: PidLock | undefined;
  try {
    lock = options.persistent ? lockDataDir(dataDir) : undefined;
    return await startJvm(options, resolveBrokerJars(options.cacheDir), dataDir, lock);
  } catch (err) {
    lock?.release();
    if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

async function startJvm(
  options: LocalBrokerOptions,
  lib: string,
  dataDir: string,
  lock: PidLock | undefined,
): Promise<LocalBroker> {
  const startedAt = Date.now();
  const timeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const deadline = startedAt + timeoutMs;
  const logFile = join(dataDir, 'broker.log');
  const avoid = new Set<number>();
  for (let portRetries = 0; ;) {
    const [port, controllerPort] = await choosePorts(options, dataDir, avoid);
    const propsFile = join(dataDir, 'server.properties');
    writeFileSync(propsFile, serverProperties(dataDir, port, controllerPort));
    formatStorage(lib, dataDir, propsFile);
    const jvm = spawnJvm(lib, propsFile, logFile);
    let failure: StartFailure | undefined;
    try {
      failure = await waitForStart(jvm, logFile, deadline, () => options.onWaiting?.(Date.now() - startedAt, logFile));
    } catch (err) {
      await jvm.stop(5000);
      if (!(err instanceof StartTimeout)) throw err;
      throw new LocalBrokerUnavailableError(
        `The embedded Kafka ${KAFKA_VERSION} did not start within ${Math.round(timeoutMs / 1000)} s ` +
          `(log: ${logFile}):\n` +
          readLog(logFile).slice(-3000),
        false,
      );
    }
    if (failure === undefined) return running(options, jvm, port, logFile, dataDir, lock);
    await jvm.stop(5000);
    if (failure.kind === 'data-locked') {
      if (Date.now() >= deadline) {
        throw new LocalBrokerUnavailableError(`Another Kafka still holds ${dataDir} (log: ${logFile}).`, false);
      }
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    const taken = failure.port;
    if (options.port !== undefined && (taken === undefined || taken === options.port)) {
      throw new LocalBrokerUnavailableError(`Port ${options.port} is taken: the embedded Kafka cannot use it.`, false);
    }
    if (++portRetries > MAX_PORT_RETRIES) {
      throw new LocalBrokerUnavailableError(
        `The embedded Kafka ${KAFKA_VERSION} found its ports taken ${portRetries} times (log: ${logFile}).`,
        false,
      );
    }
    for (const p of taken === undefined ? [port, controllerPort] : [taken]) avoid.add(p);
  }
}

function running(
  options: LocalBrokerOptions,
  jvm: Jvm,
  port: number,
  logFile: string,
  dataDir: string,
  lock: PidLock | undefined,
): LocalBroker {
  // The data is free again once its JVM is gone, even when it died on its own.
  void jvm.exited.then(() => lock?.release());
  let stopping = false;
  return {
    bootstrap: `127.0.0.1:${port}`,
    logFile,
    dataDir,
    pid: jvm.child.pid,
    died: jvm.exited.then(() => (stopping ? new Promise<void>(() => undefined) : undefined)),
    async stop(graceMs = 20000) {
      stopping = true;
      await jvm.stop(graceMs);
      lock?.release();
      if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
