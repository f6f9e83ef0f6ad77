import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { acquirePidLock, LockHeldError, type PidLock } from '../lib/pid-lock';
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
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 180000;
const PROGRESS_EVERY_MS = 5000;
/** starts retried because a chosen port was taken before the JVM bound it */
const MAX_PORT_RETRIES = 5;

/*
 * The JVM is started under a small bash watchdog that reads its stdin, a pipe
 * from this process. When this process dies in any way, SIGKILL included, the
 * pipe closes, `read` sees EOF and the watchdog stops the broker: no orphaned
 * JVM. A background job's stdin is /dev/null unless redirected, hence `<&0`.
 * SIGUSR1 makes the watchdog SIGKILL its JVM: a SIGKILL to the watchdog itself
 * would leave the JVM running. Ctrl-C reaches the whole process group: SIGINT
 * is ignored so the service can stop before its broker, in that order.
 */
const WATCHDOG = `
trap '' INT
java "$@" </dev/null &
jpid=$!
trap 'kill -TERM $jpid 2>/dev/null' TERM HUP
trap 'kill -KILL $jpid 2>/dev/null' USR1
{ while read -r _; do :; done; kill -TERM $jpid 2>/dev/null; } <&0 &
wait $jpid
wait $jpid 2>/dev/null
`;

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

async function freePort(avoid: ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await anyFreePort();
    if (!avoid.has(port)) return port;
  }
}

export function serverProperties(dataDir: string, port: number, controllerPort: number): string {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${join(dataDir, 'logs')}`,
    // A single development node: replication 1, few internal partitions so the coordinators load fast.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=3',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=3',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    '',
  ].join('\n');
}

/**
 * A persistent broker keeps its ports across restarts when they are free, so clients can reconnect.
 * `avoid`: ports a previous try found taken when the JVM bound them.
 */
async function choosePorts(
  options: LocalBrokerOptions,
  dataDir: string,
  avoid: ReadonlySet<number>,
): Promise<[number, number]> {
  const saved = join(dataDir, 'ports.json');
  const usable = async (p: number) => !avoid.has(p) && (await portIsFree(p));
  let port = options.port;
  let controllerPort: number | undefined;
  if (port === undefined && options.persistent && existsSync(saved)) {
    const [p, c] = JSON.parse(readFileSync(saved, 'utf8')) as [number, number];
    if ((await usable(p)) && (await usable(c))) [port, controllerPort] = [p, c];
  }
  const preferred = options.preferredPort;
  port ??= preferred !== undefined && (await usable(preferred)) ? preferred : await freePort(avoid);
  controllerPort ??= await freePort(new Set([...avoid, port]));
  if (options.persistent) writeFileSync(saved, JSON.stringify([port, controllerPort]));
  return [port, controllerPort];
}

/** Where a running broker on this data can be reached, for the message that refuses a second one. */
function savedBootstrap(dataDir: string): string | undefined {
  try {
    const [port] = JSON.parse(readFileSync(join(dataDir, 'ports.json'), 'utf8')) as [number, number];
    return `127.0.0.1:${port}`;
  } catch {
    return undefined;
  }
}

/** One process per persistent data folder: a second one would rewrite its ports and properties under it. */
function lockDataDir(dataDir: string): PidLock {
  try {
    return acquirePidLock(join(dataDir, 'hookstream.lock'));
  } catch (err) {
    if (!(err instanceof LockHeldError)) throw err;
    const bootstrap = savedBootstrap(dataDir);
    throw new LocalBrokerUnavailableError(
      `Another hookstream (pid ${err.pid}) is already running the embedded Kafka on ${dataDir}` +
        `${bootstrap ? ` (Kafka at ${bootstrap})` : ''}. Stop it first, or set HOOKSTREAM_CACHE_DIR to another folder.`,
      false,
    );
  }
}

function prepareDataDir(options: LocalBrokerOptions): string {
  const dataDir = options.persistent
    ? (options.dataDir ?? join(options.cacheDir, 'data', 'default'))
    : join(options.cacheDir, 'data', `run-${Date.now()}-${process.pid}-${randomBytes(3).toString('hex')}`);
  mkdirSync(dataDir, { recursive: true });
  return dataDir;
}

/**
 * Formats KRaft storage unless already formatted. Cluster ids are 16 random bytes in URL-safe base64
 * without padding, as `kafka-storage random-uuid` makes them; one may start with '-', hence the
 * `--cluster-id=` form, which no option parser can misread.
 */
export function formatStorage(
  lib: string,
  dataDir: string,
  propsFile: string,
  clusterId = randomBytes(16).toString('base64url'),
): void {
  if (existsSync(join(dataDir, 'logs', 'meta.properties'))) return;
  const r = spawnSync(
    'java',
    ['-cp', join(lib, '*'), 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '--config', propsFile],
    { encoding: 'utf8' },
  );
  if (r.status !== 0)
    throw new LocalBrokerUnavailableError(
      `Formatting the broker storage failed:\n${(r.stdout + r.stderr).slice(-2000)}`,
      false,
    );
}

/** Why a start failed in a way another start can fix; read from the broker log. */
export type StartFailure = { kind: 'port-taken'; port: number | undefined } | { kind: 'data-locked' };

export function startFailure(log: string): StartFailure | undefined {
  const bind = /failed to bind to [^\s]*:(\d+)/i.exec(log);
  if (bind) return { kind: 'port-taken', port: Number(bind[1]) };
  if (/Address already in use|BindException/.test(log)) return { kind: 'port-taken', port: undefined };
  // A previous JVM on the same data (killed a moment ago) has not finished exiting.
  if (/Failed to acquire lock on file \.lock/.test(log)) return { kind: 'data-locked' };
  return undefined;
}

interface Jvm {
  child: ChildProcess;
  exited: Promise<void>;
  running(): boolean;
  /** SIGTERM (a controlled shutdown); after graceMs the JVM is SIGKILLed */
  stop(graceMs: number): Promise<void>;
}

function spawnJvm(lib: string, propsFile: string, logFile: string): Jvm {
  const logFd = openSync(logFile, 'w');
  const javaArgs = [
    '-Xms128m',
    '-Xmx768m',
    '-XX:+UseG1GC',
    '-Djava.awt.headless=true',
    '-cp',
    join(lib, '*'),
    'kafka.Kafka',
    propsFile,
  ];
  const child = spawn('bash', ['-c', WATCHDOG, 'hookstream-kafka', ...javaArgs], { stdio: ['pipe', logFd, logFd] });
  closeSync(logFd);
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    exited,
    running,
    async stop(graceMs) {
      if (!running()) return;
      child.stdin?.end();
      child.kill('SIGTERM');
      const kill = setTimeout(() => child.kill('SIGUSR1'), graceMs);
      const last = setTimeout(() => child.kill('SIGKILL'), graceMs + 5000);
      await exited;
      clearTimeout(kill);
      clearTimeout(last);
    },
  };
}

function readLog(logFile: string): string {
  return existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
}

async function waitForStart(
  jvm: Jvm,
  logFile: string,
  deadline: number,
  tick: () => void,
): Promise<StartFailure | undefined> {
  let lastTick = Date.now();
  for (;;) {
    const log = readLog(logFile);
    if (log.includes('Kafka Server started')) return undefined;
    const failure = startFailure(log);
    if (failure) return failure;
    if (!jvm.running()) {
      // The log may still be flushing its last lines.
      const tail = readLog(logFile);
      const late = startFailure(tail);
      if (late) return late;
      throw new LocalBrokerUnavailableError(
        `The embedded Kafka ${KAFKA_VERSION} exited while starting (log: ${logFile}):\n${tail.slice(-3000)}`,
        false,
      );
    }
    if (Date.now() >= deadline) throw new StartTimeout();
    if (Date.now() - lastTick >= PROGRESS_EVERY_MS) {
      lastTick = Date.now();
      tick();
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

class StartTimeout extends Error {}

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
  return {
    bootstrap: `127.0.0.1:${port}`,
    logFile,
    pid: jvm.child.pid,
    async stop() {
      await jvm.stop(20000);
      lock?.release();
      if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
