/** The embedded broker's JVM: run under a watchdog so it never outlives us, and watched until it says it started. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KAFKA_VERSION } from './kafka-version';
import { LocalBrokerUnavailableError } from './local-broker-jars';

const PROGRESS_EVERY_MS = 5000;

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

export interface Jvm {
  child: ChildProcess;
  exited: Promise<void>;
  running(): boolean;
  /** SIGTERM (a controlled shutdown); after graceMs the JVM is SIGKILLed */
  stop(graceMs: number): Promise<void>;
}

export function spawnJvm(lib: string, propsFile: string, logFile: string): Jvm {
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

export function readLog(logFile: string): string {
  return existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
}

export async function waitForStart(
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

export class StartTimeout extends Error {}
