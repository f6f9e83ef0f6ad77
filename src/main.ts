import { join } from 'node:path';
import { ConfigError, loadConfig, type Config } from './config';
import { LocalBrokerUnavailableError } from './embedded-kafka/local-broker-jars';
import { startLocalBroker, type LocalBroker } from './embedded-kafka/local-broker';
import { KAFKA_VERSION } from './embedded-kafka/kafka-version';
import { prepareCacheDir } from './embedded-kafka/cache-dir';
import { groupMembersFile } from './embedded-kafka/group-members-file';
import { createLogger } from './logger';
import { CONSUMER_ROLES } from '../consumers/roles';
import { exampleResources, exampleTaskTypes } from './examples';
import { startService, type RunningService } from './service';
import { connectKafka } from './kafka/kafka-gateway';
import { brokersUnreachable } from './startup/broker-reachable';
import { HostUnusableError, PortTakenError } from './startup/listen-errors';
import { listenWhileStarting, type HeldPort } from './startup/starting-server';
import { KafkaStartupTimeoutError, StartupAbortedError, waitForKafka } from './startup/wait-for-kafka';
import { settlesWithin } from './lib/settles-within';
import { SERVICE_STOP_LIMIT_MS, SHUTDOWN_LIMIT_MS } from './startup/shutdown-limits';

function banner(config: Config, url: string, brokers: string[], embedded: boolean): string {
  const lines = [`hookstream is running (role: ${config.role})`];
  if (config.role === 'all' || config.role === 'api') lines.push(`  API:    ${url}`);
  if (config.apiKeys.generated && (config.role === 'all' || config.role === 'api')) {
    lines.push(
      `  API key (generated for this run; set API_KEYS to choose your own): ${[...config.apiKeys.byKey.keys()][0]}`,
    );
  }
  lines.push(`  Kafka:  ${brokers.join(',')}${embedded ? ` (embedded Apache Kafka ${KAFKA_VERSION})` : ''}`);
  return lines.join('\n');
}

/** Creates the service's topics and exits: docker-compose runs it before the roles start. */
async function createTopics(config: Config, brokers: string[]): Promise<void> {
  const kafka = await connectKafka({
    brokers,
    topicPrefix: config.topicPrefix,
    partitions: config.topicPartitions,
    timeoutMs: config.kafkaTimeoutMs,
    processName: 'topics',
    logger: createLogger(config.logLevel),
  });
  await kafka.close();
  process.stdout.write(`topics under ${JSON.stringify(config.topicPrefix)} exist on ${brokers.join(',')}\n`);
}

/** Lines for the person who started the process, whatever LOG_LEVEL says. */
function say(line: string): void {
  process.stderr.write(`hookstream: ${line}\n`);
}

/**
 * `node dist/src/main.js [all|api|runner|bridge|topics]`; ROLE sets the role too. The entry point is the one module
 * of src/ that names consumers/ (lint holds it): it hands their roles, and what the service registers, to startService.
 */
async function main(): Promise<void> {
  const command = process.argv[2];
  const config = loadConfig(undefined, command === 'topics' ? undefined : command);
  const logger = createLogger(config.logLevel);
  if (command === 'topics' && !config.kafkaBrokers) throw new ConfigError(['the topics command needs KAFKA_BROKERS']);
  if (!config.kafkaBrokers && !config.embeddedKafka) {
    throw new ConfigError([
      'KAFKA_BROKERS is not set, and this installation has no embedded Kafka (EMBEDDED_KAFKA=false, as in the image): ' +
        'set KAFKA_BROKERS=host:port (docker compose up runs Kafka beside the roles)',
    ]);
  }
  let broker: LocalBroker | undefined;
  let service: RunningService | undefined;
  // Assigned at the port check; the shutdown handler below may run before that.
  let starting: HeldPort | undefined = undefined;
  // Installed before anything starts: a signal during startup must still stop what has started.
  const startup = new AbortController();
  let stopping = false;
  const shutdown = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    startup.abort();
    logger.info({ signal }, 'shutting down');
    const started = Date.now();
    const force = setTimeout(() => {
      logger.error({ signal }, 'shutdown took longer than 30 s; exiting without finishing it');
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS);
    force.unref();
    await starting?.close();
    // Bounded, so the embedded broker is always stopped before the limit: against a broker that hangs (stopped, or
    // stalled) the service's Kafka clients each wait out a request timeout, and the JVM would be left running.
    const stopped = await settlesWithin(service?.stop(), SERVICE_STOP_LIMIT_MS, (err) =>
      logger.error({ err }, 'the service failed to stop cleanly'),
    );
    if (!stopped) logger.error({ signal }, 'the service did not stop in 15 s (Kafka not answering); stopping the rest');
    // The JVM's controlled shutdown gets up to 20 s, less what is left of the limit after a SIGKILL's 5 s.
    const left = SHUTDOWN_LIMIT_MS - (Date.now() - started) - 5000;
    await broker?.stop(Math.max(1000, Math.min(20000, left)));
    logger.info({ signal, ms: Date.now() - started }, 'stopped');
    process.exit(stopped ? exitCode : 1);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  // The limit bounds the embedded broker's JVM start and, separately, connecting: a first start's
  // jar download comes before both and is not counted.
  const patiently = <T>(brokers: string[], attempt: () => Promise<T>, discard?: (value: T) => Promise<void>) =>
    waitForKafka(attempt, {
      brokers,
      timeoutMs: config.kafkaStartupTimeoutMs,
      signal: startup.signal,
      logger,
      discard,
      progress: say,
      precheck: () => brokersUnreachable(brokers),
    });

  if (command === 'topics') {
    const brokers = config.kafkaBrokers as string[];
    await patiently(brokers, () => createTopics(config, brokers));
    process.exit(0);
  }
  // A cache folder that cannot be used is a bad setting, told before anything is started.
  if (!config.kafkaBrokers) prepareCacheDir(config.cacheDir);
  // Before the broker and the replay: a taken port used to be found only when the server listened, 30 s later. Held
  // until the service listens, answering /health/live, so a liveness probe sees a process that is up while it waits.
  starting =
    config.port === 0 ? undefined : await listenWhileStarting(config.host, config.port, config.http.keepAliveTimeoutMs);
  if (!config.kafkaBrokers) {
    logger.info(
      { cacheDir: config.cacheDir },
      `no KAFKA_BROKERS set: starting an embedded Apache Kafka ${KAFKA_VERSION}`,
    );
    broker = await startLocalBroker({
      cacheDir: config.cacheDir,
      persistent: true,
      preferredPort: 9092,
      startTimeoutMs: config.kafkaStartupTimeoutMs,
      onWaiting: (ms, log) => {
        say(`waiting for the embedded Kafka to start (${Math.round(ms / 1000)} s so far; log: ${log})`);
      },
    });
    logger.info({ bootstrap: broker.bootstrap, log: broker.logFile }, 'embedded Kafka started');
    // A process whose broker died serves nothing (503 for ever, while /health/live says it lives) and no longer holds
    // the data folder's lock: it stops too, exit 1, for whoever started it (a supervisor, a terminal) to see.
    const { logFile, pid } = broker;
    void broker.died.then(() => {
      if (stopping) return;
      // Not `pid`: the logger's own names this process.
      logger.error(
        { brokerWatchdogPid: pid, log: logFile },
        'the embedded Kafka broker exited on its own; hookstream stops too',
      );
      void shutdown('embedded Kafka exited', 1);
    });
  }
  const brokers = config.kafkaBrokers ?? [(broker as LocalBroker).bootstrap];
  try {
    service = await patiently(
      brokers,
      () =>
        startService({
          config,
          brokers,
          logger,
          resources: exampleResources,
          taskTypes: exampleTaskTypes,
          consumers: CONSUMER_ROLES,
          memberRecord: broker && groupMembersFile(join(broker.dataDir, 'group-members.json'), logger),
          heldPort: starting,
        }),
      (late) => late.stop(),
    );
  } catch (err) {
    await starting?.close();
    if (!stopping) await broker?.stop();
    throw err;
  }
  if (!stopping) process.stdout.write(`\n${banner(config, service.url, brokers, broker !== undefined)}\n\n`);
}

main().catch((err: unknown) => {
  // shutdown() exits (0) once it has stopped what had started.
  if (err instanceof StartupAbortedError) return;
  const explained = [
    ConfigError,
    LocalBrokerUnavailableError,
    KafkaStartupTimeoutError,
    PortTakenError,
    HostUnusableError,
  ].some((type) => err instanceof type);
  if (explained && err instanceof Error) {
    process.stderr.write(`hookstream: ${err.message}\n`);
  } else {
    process.stderr.write(`hookstream: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
