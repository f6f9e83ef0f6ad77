import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { KAFKA_VERSION } from './kafka-version';
import { LocalBrokerUnavailableError, resolveBrokerJars } from './local-broker-jars';

export interface LocalBrokerOptions {
  cacheDir: string;
  /** keep data across runs (npm start) or use a fresh folder removed on stop (tests) */
  persistent: boolean;
  /** tried first when persistent; a free port is taken when it is busy */
  preferredPort?: number;
  /** a persistent broker's folder; default `<cacheDir>/data/default` */
  dataDir?: string;
}

export interface LocalBroker {
  readonly bootstrap: string;
  readonly logFile: string;
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/*
 * The JVM is started under a small bash watchdog that reads its stdin, a pipe
 * from this process. When this process dies in any way, SIGKILL included, the
 * pipe closes, `read` sees EOF and the watchdog stops the broker: no orphaned
 * JVM. A background job's stdin is /dev/null unless redirected, hence `<&0`.
 */
const WATCHDOG = `
java "$@" </dev/null &
jpid=$!
trap 'kill -TERM $jpid 2>/dev/null' TERM INT HUP
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

function freePort(): Promise<number> {
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

/** A persistent broker keeps its ports across restarts when they are free, so clients can reconnect. */
async function choosePorts(options: LocalBrokerOptions, dataDir: string): Promise<[number, number]> {
  const saved = join(dataDir, 'ports.json');
  if (options.persistent && existsSync(saved)) {
    const [p, c] = JSON.parse(readFileSync(saved, 'utf8')) as [number, number];
    if ((await portIsFree(p)) && (await portIsFree(c))) return [p, c];
  }
  const preferred = options.preferredPort;
  const port = preferred !== undefined && (await portIsFree(preferred)) ? preferred : await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  if (options.persistent) writeFileSync(saved, JSON.stringify([port, controllerPort]));
  return [port, controllerPort];
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
export function formatStorage(lib: string, dataDir: string, propsFile: string, clusterId = randomBytes(16).toString('base64url')): void {
  if (existsSync(join(dataDir, 'logs', 'meta.properties'))) return;
  const r = spawnSync('java', ['-cp', join(lib, '*'), 'kafka.tools.StorageTool', 'format', `--cluster-id=${clusterId}`, '--config', propsFile], { encoding: 'utf8' });
  if (r.status !== 0) throw new LocalBrokerUnavailableError(`Formatting the broker storage failed:\n${(r.stdout + r.stderr).slice(-2000)}`, false);
}

async function waitForStart(child: ChildProcess, logFile: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) break;
    const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    if (log.includes('Kafka Server started')) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  const tail = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3000) : '';
  child.kill('SIGKILL');
  throw new LocalBrokerUnavailableError(`The embedded Kafka ${KAFKA_VERSION} did not start (log: ${logFile}):\n${tail}`, false);
}

/** Starts a single-node KRaft broker from the official Apache Kafka jars. */
export async function startLocalBroker(options: LocalBrokerOptions): Promise<LocalBroker> {
  const lib = resolveBrokerJars(options.cacheDir);
  const dataDir = prepareDataDir(options);
  const [port, controllerPort] = await choosePorts(options, dataDir);
  const propsFile = join(dataDir, 'server.properties');
  writeFileSync(propsFile, serverProperties(dataDir, port, controllerPort));
  formatStorage(lib, dataDir, propsFile);

  const logFile = join(dataDir, 'broker.log');
  const logFd = openSync(logFile, 'w');
  const javaArgs = ['-Xms128m', '-Xmx768m', '-XX:+UseG1GC', '-Djava.awt.headless=true', '-cp', join(lib, '*'), 'kafka.Kafka', propsFile];
  const child = spawn('bash', ['-c', WATCHDOG, 'hookstream-kafka', ...javaArgs], { stdio: ['pipe', logFd, logFd] });
  closeSync(logFd);
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();

  await waitForStart(child, logFile, 90000);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  return {
    bootstrap: `127.0.0.1:${port}`,
    logFile,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin?.end();
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 20000);
        await exited;
        clearTimeout(killer);
      }
      if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
