import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testBrokers, TENANT_A_KEY, TENANT_B_KEY } from './test-service';

const MAIN = join(__dirname, '../../dist/src/main.js');

export interface ChildService {
  process: ChildProcess;
  logFile: string;
  /** the API address the banner printed (roles api and all); undefined for the other roles */
  url: string | undefined;
  /** true until the process exits, whoever ended it */
  readonly running: boolean;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** Runs a role as its own OS process from the build, as an operator would: `node dist/src/main.js <role>`. */
export async function startChildService(
  role: string,
  prefix: string,
  env: Record<string, string> = {},
): Promise<ChildService> {
  if (!existsSync(MAIN))
    throw new Error('dist/src/main.js is missing: `npm test` builds it first (or run `npm run build`)');
  const unique = `${process.pid}-${Date.now()}-${randomBytes(3).toString('hex')}`;
  const logFile = join(tmpdir(), `hookstream-${role}-${unique}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [MAIN, role], {
    stdio: ['ignore', 'pipe', fd],
    env: {
      PATH: process.env.PATH ?? '',
      KAFKA_BROKERS: testBrokers().join(','),
      TOPIC_PREFIX: prefix,
      PORT: '0',
      HOST: '127.0.0.1',
      API_KEYS: `tenant-a:${TENANT_A_KEY},tenant-b:${TENANT_B_KEY}`,
      LOG_LEVEL: 'warn',
      CALLBACK_ALLOW_PRIVATE: 'true',
      ...env,
    },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // pino logs to stdout: the log file gets stdout and stderr, in order of arrival.
  child.stdout?.on('data', (d: Buffer) => writeSync(fd, d));
  child.once('close', () => closeSync(fd));
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${role} did not start in 60 s; see ${logFile}`));
    }, 60000);
    const watch = (d: Buffer) => {
      out += d.toString();
      // The banner's last line names Kafka; waiting for it means its API line has arrived too.
      if (/hookstream is running[^]*Kafka:[^\n]*\n/.test(out)) {
        clearTimeout(timer);
        child.stdout?.off('data', watch);
        resolve();
      }
    };
    child.stdout?.on('data', watch);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${role} exited with ${code} before starting; see ${logFile}`));
    });
  });
  return {
    process: child,
    logFile,
    url: /API: +(http:\/\/\S+)/.exec(out)?.[1],
    get running() {
      return child.exitCode === null && child.signalCode === null;
    },
    kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
