/** The embedded broker's data folder: its properties, its KRaft storage, and one process at a time on it. */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { acquirePidLock, LockHeldError, type PidLock } from '../lib/pid-lock';
import type { LocalBrokerOptions } from './local-broker';
import { LocalBrokerUnavailableError } from './local-broker-jars';

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
    // A writer that died mid-transaction holds every read_committed reader of its partitions (the views, and with
    // them every keyed write's claim) until the coordinator aborts it: once its timeout passed, at the coordinator's
    // next check. Kafka checks every 10 s, which added up to 10 s to the 10 s timeout; every second adds at most 1.
    'transaction.abort.timed.out.transaction.cleanup.interval.ms=1000',
    '',
  ].join('\n');
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
export function lockDataDir(dataDir: string): PidLock {
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

export function prepareDataDir(options: Pick<LocalBrokerOptions, 'persistent' | 'dataDir' | 'cacheDir'>): string {
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
